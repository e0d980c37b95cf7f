package dev.memfit.train;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.XavierInitializer;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A variational autoencoder on particle images (fully connected encoder and decoder, Gaussian latent of
 * {@code zdim} dimensions), on DJL PyTorch, GPU when DJL sees one.
 *
 * <p>Each image is standardised (zero mean, unit variance) before encoding. The loss per image is
 * {@code 0.5 * ||x - decoder(z)||^2 + beta * KL(q(z|x) || N(0, I))}, averaged over the batch. Train it from an eager
 * or a lazy loader: the model does not know the difference, which is the point.
 *
 * <p>The parameters are built by the first fit and kept until {@link #close()}: a second fit goes on training them.
 */
public final class ImageVae implements Trainer {

    private final int latent;
    private final int hidden;
    private final float learningRate;
    private final float beta;
    private final Fit loop;
    private NDManager manager;
    private Block encoder;
    private Block decoder;
    private ParameterStore store;
    private long pixels;
    private boolean closed;

    private ImageVae(Builder builder) {
        this.latent = builder.latent;
        this.hidden = builder.hidden;
        this.learningRate = builder.learningRate;
        this.beta = builder.beta;
        this.loop = new Fit("Image VAE", builder);
    }

    /**
     * Starts a builder.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The latent dimension.
     *
     * @return zdim
     */
    public int latentDimension() {
        return latent;
    }

    /**
     * Trains on the images a loader yields (float32, any image shape); the first fit builds the parameters, later
     * ones go on training them.
     *
     * @param loader batches of images
     * @return what each epoch did (loss: the mean loss per image)
     * @throws IllegalArgumentException when the images differ in size from those of an earlier fit, or the batches
     *         are not float32 (build the loader with {@code optConvertTo(DType.FLOAT32)})
     */
    @Override
    public FitResult fit(Loader loader) {
        checkOpen();
        Fit.requireFloat32(loader, "the image VAE", false);
        long size = loader.sampleShape().size();
        if (manager == null) {
            pixels = size;
            loop.seed();
            manager = Fit.engine().newBaseManager(loop.device());
            encoder = mlp(2L * latent);
            decoder = mlp(pixels);
            encoder.initialize(manager, DataType.FLOAT32, new Shape(1, pixels));
            decoder.initialize(manager, DataType.FLOAT32, new Shape(1, latent));
            store = new ParameterStore(manager, false);
            BlockTraining.requireGradients(encoder, decoder);
        } else if (size != pixels) {
            throw new IllegalArgumentException("the VAE was built for images of " + pixels + " pixels, the loader's have "
                    + size);
        }
        Map<String, NDArray> parameters = BlockTraining.parameters("encoder/", encoder, "decoder/", decoder);
        DenseAdam adam = new DenseAdam(learningRate, parameters);
        // Each micro-batch contributes its share of the mean over k full batches, so k accumulated micro-batches
        // give the gradient of one batch k times larger (a short last group is divided as a full one, as a short
        // last batch is without accumulation).
        float share = 1f / (loop.accumulation() * (float) loader.batchSize());
        try {
            return loop.run(loader, manager, new BlockTraining.Model(parameters, adam) {
                @Override
                public double backward(Batch batch, Fit.Step step) {
                    NDManager scope = step.batchScope();
                    NDArray x = standardise(Fit.onDevice(batch, scope, manager.getDevice())
                            .reshape(batch.size(), pixels));
                    NDArray perImage = losses(x, scope);
                    step.backward(BlockTraining.times(perImage.sum(), share, scope));
                    return perImage.sum().getFloat();
                }

                @Override
                public void update(Fit.Step step) {
                    BlockTraining.step(adam, step.scope(), 1f, parameters);
                }

                @Override
                public Map<String, String> settings() {
                    Map<String, String> settings = new LinkedHashMap<>();
                    settings.put("latent dimension", Integer.toString(latent));
                    settings.put("hidden units", Integer.toString(hidden));
                    settings.put("beta", Float.toString(beta));
                    settings.put("learning rate", Float.toString(learningRate));
                    settings.put("pixels", Long.toString(pixels));
                    return settings;
                }
            });
        } finally {
            adam.close();
        }
    }

    /** The loss of each image: half the squared reconstruction error plus beta times the KL divergence. */
    private NDArray losses(NDArray x, NDManager step) {
        NDArray encoded = encoder.forward(store, new NDList(x), true).singletonOrThrow();
        NDArray mean = encoded.get(new NDIndex(":, :" + latent));
        NDArray logVariance = boundedLogVariance(encoded.get(new NDIndex(":, " + latent + ":")));
        NDArray noise = HostDrawn.normal(step, mean.getShape()).toDevice(mean.getDevice(), false);
        NDArray z = mean.add(noise.mul(BlockTraining.times(logVariance, 0.5f, step).exp()));
        NDArray reconstruction = decoder.forward(store, new NDList(z), true).singletonOrThrow();
        NDArray squaredError = BlockTraining.times(reconstruction.sub(x).square().sum(new int[]{1}), 0.5f, step);
        return squaredError.add(BlockTraining.times(klPerImage(mean, logVariance, step), beta, step));
    }

    /** The bound on the encoder's log-variance, as in common VAE code: exp(+-10) is far from float32's limits. */
    static final float LOG_VARIANCE_BOUND = 10f;

    /**
     * The encoder's log-variance clipped to [-{@value #LOG_VARIANCE_BOUND}, {@value #LOG_VARIANCE_BOUND}]. Unbounded,
     * one large value makes exp() overflow to infinity and the loss jump by many orders of magnitude for epochs (seen
     * at notebook 04's default size: a 1e16 spike in one of two runs that agreed to the last digit for five epochs).
     */
    static NDArray boundedLogVariance(NDArray logVariance) {
        return logVariance.clip(-LOG_VARIANCE_BOUND, LOG_VARIANCE_BOUND);
    }

    /** KL divergence of N(mean, exp(logVariance)) from N(0, 1), summed over the latent dimensions of each image. */
    static NDArray klPerImage(NDArray mean, NDArray logVariance, NDManager scope) {
        return BlockTraining.times(logVariance.add(1).sub(mean.square()).sub(logVariance.exp()).sum(new int[]{1}), -0.5f, scope);
    }

    private NDArray standardise(NDArray x) {
        NDArray centred = x.sub(x.mean(new int[]{1}, true));
        NDArray scale = centred.square().mean(new int[]{1}, true).sqrt().add(1e-6f);
        return centred.div(scale);
    }

    private SequentialBlock mlp(long outputs) {
        SequentialBlock block = new SequentialBlock()
                .add(Linear.builder().setUnits(hidden).build()).add(Activation::relu)
                .add(Linear.builder().setUnits(hidden).build()).add(Activation::relu)
                .add(Linear.builder().setUnits(outputs).build());
        block.setInitializer(new HostDrawn(new XavierInitializer()), Parameter.Type.WEIGHT);
        return block;
    }

    /**
     * The latent means of every image a loader yields, in loader order (use a loader without shuffle to get them
     * by particle index).
     *
     * @param loader batches of images
     * @return n rows of {@code zdim} values
     */
    public float[][] embed(Loader loader) {
        checkOpen();
        if (manager == null) {
            throw new IllegalStateException("fit the model before embedding");
        }
        Fit.requireFloat32(loader, "the image VAE", false);
        List<float[]> rows = new ArrayList<>();
        for (Batch batch : loader.epoch(0)) {
            try (NDManager step = manager.newSubManager()) {
                NDArray x = standardise(Fit.onDevice(batch, step, manager.getDevice()).reshape(batch.size(), pixels));
                NDArray encoded = encoder.forward(store, new NDList(x), false).singletonOrThrow();
                float[] means = encoded.get(new NDIndex(":, :" + latent)).toDevice(Device.cpu(), false).toFloatArray();
                for (int i = 0; i < batch.size(); i++) {
                    float[] row = new float[latent];
                    System.arraycopy(means, i * latent, row, 0, latent);
                    rows.add(row);
                }
            }
        }
        return rows.toArray(new float[0][]);
    }

    /** Frees the parameters. Idempotent. */
    @Override
    public void close() {
        closed = true;
        if (manager != null) {
            manager.close();
            manager = null;
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the image VAE is closed");
        }
    }

    /**
     * Configures an {@link ImageVae}: every setting is optional. Defaults: 20 epochs, learning rate 1e-3, latent
     * dimension 8, hidden width 256, beta 1, and those of {@link TrainerBuilder}.
     */
    public static final class Builder extends TrainerBuilder<Builder> {
        private int latent = 8;
        private int hidden = 256;
        private float beta = 1f;

        private Builder() {
            super(20, 1e-3f);
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the latent dimension (default 8, cryoDRGN's default zdim).
         *
         * @param zdim at least 1
         * @return this builder
         */
        public Builder optLatent(int zdim) {
            this.latent = zdim;
            return this;
        }

        /**
         * Sets the width of the hidden layers (default 256).
         *
         * @param units at least 1
         * @return this builder
         */
        public Builder optHidden(int units) {
            this.hidden = units;
            return this;
        }

        /**
         * Sets the weight of the KL term (default 1).
         *
         * @param weight non-negative
         * @return this builder
         */
        public Builder optBeta(double weight) {
            this.beta = (float) weight;
            return this;
        }

        /**
         * Validates and builds.
         *
         * @return the model
         * @throws IllegalArgumentException when a setting is out of range
         */
        public ImageVae build() {
            validate();
            if (latent < 1 || hidden < 1 || !(beta >= 0)) {
                throw new IllegalArgumentException("optLatent and optHidden need values >= 1 and optBeta a value >= 0, got "
                        + latent + ", " + hidden + " and " + beta);
            }
            return new ImageVae(this);
        }
    }
}
