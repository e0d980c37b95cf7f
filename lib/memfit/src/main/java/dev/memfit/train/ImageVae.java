package dev.memfit.train;

import ai.djl.Device;
import ai.djl.engine.Engine;
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
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.XavierInitializer;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.memfit.Progress;
import dev.memfit.memory.DeviceMemory;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A variational autoencoder on particle images (fully connected encoder and decoder, Gaussian latent of
 * {@code zdim} dimensions), on DJL PyTorch, GPU when DJL sees one.
 *
 * <p>Each image is standardised (zero mean, unit variance) before encoding. The loss per image is
 * {@code 0.5 * ||x - decoder(z)||^2 + beta * KL(q(z|x) || N(0, I))}, averaged over the batch. Train it from an eager
 * or a lazy loader: the model does not know the difference, which is the point.
 */
public final class ImageVae implements AutoCloseable {

    private final int latent;
    private final int hidden;
    private final int epochs;
    private final float learningRate;
    private final float beta;
    private final long seed;
    private final Device device;
    private final int accumulation;
    private NDManager manager;
    private Block encoder;
    private Block decoder;
    private ParameterStore store;
    private long pixels;

    private ImageVae(Builder builder) {
        this.accumulation = builder.accumulation;
        this.latent = builder.latent;
        this.hidden = builder.hidden;
        this.epochs = builder.epochs;
        this.learningRate = builder.learningRate;
        this.beta = builder.beta;
        this.seed = builder.seed;
        this.device = builder.device;
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
     * Trains on the images a loader yields (float32, any image shape).
     *
     * @param loader batches of images
     * @param onEpoch called after every epoch
     * @return one entry per epoch
     */
    public List<EpochStats> fit(Loader loader, Consumer<EpochStats> onEpoch) {
        Engine engine = Engine.getEngine("PyTorch");
        Device target = device != null ? device : engine.defaultDevice();
        pixels = loader.sampleShape().size();
        if (manager == null) {
            engine.setRandomSeed(Math.toIntExact(seed & 0x7fffffff));
            manager = engine.newBaseManager(target);
            encoder = mlp(2L * latent);
            decoder = mlp(pixels);
            encoder.initialize(manager, DataType.FLOAT32, new Shape(1, pixels));
            decoder.initialize(manager, DataType.FLOAT32, new Shape(1, latent));
            store = new ParameterStore(manager, false);
            BlockTraining.requireGradients(encoder, decoder);
        }
        // Reseeded per fit so that the same loader order gives the same losses, eager or lazy.
        engine.setRandomSeed(Math.toIntExact(seed & 0x7fffffff));
        Optimizer adam = Optimizer.adam().optLearningRateTracker(Tracker.fixed(learningRate)).build();
        List<EpochStats> history = new ArrayList<>();
        try (Progress progress = Progress.bar("Image VAE", epochs * loader.batchesPerEpoch(), "batches")) {
            for (int epoch = 0; epoch < epochs; epoch++) {
                long start = System.nanoTime();
                double lossSum = 0;
                long samples = 0;
                long steps = 0;
                NDManager group = null;
                GradientCollector collector = null;
                int inGroup = 0;
                // Each micro-batch contributes its share of the mean over k full batches, so k accumulated
                // micro-batches give the gradient of one batch k times larger (a partial last group counts as full).
                float share = 1f / (accumulation * (float) loader.batchSize());
                for (Batch batch : loader.epoch(epoch)) {
                    if (group == null) {
                        group = manager.newSubManager();
                        collector = engine.newGradientCollector();
                    }
                    NDArray x = standardise(batch.toNDArray(group).toDevice(target, false).reshape(batch.size(), pixels));
                    NDArray perImage = losses(x, group);
                    collector.backward(perImage.sum().mul(share));
                    lossSum += perImage.sum().getFloat();
                    if (++inGroup == accumulation) {
                        update(adam, group, collector);
                        group = null;
                        inGroup = 0;
                        steps++;
                    }
                    samples += batch.size();
                    progress.step(1);
                }
                if (group != null) {
                    update(adam, group, collector);
                    steps++;
                }
                // Between epochs, cached but unused GPU memory goes back to the driver (no-op on the CPU).
                DeviceMemory.releaseCache(target);
                EpochStats stats = new EpochStats(epoch, lossSum / Math.max(1, samples), (System.nanoTime() - start) / 1e9,
                        steps, samples);
                history.add(stats);
                progress.message(String.format("epoch %d loss %.2f", epoch, stats.loss()));
                onEpoch.accept(stats);
            }
        }
        return history;
    }

    /** One Adam step on the accumulated gradients of every parameter, then frees the group's arrays. */
    private void update(Optimizer adam, NDManager group, GradientCollector collector) {
        try (group) {
            collector.close();
            BlockTraining.step(adam, group, encoder, decoder);
        }
    }

    /** The loss of each image: half the squared reconstruction error plus beta times the KL divergence. */
    private NDArray losses(NDArray x, NDManager step) {
        NDArray encoded = encoder.forward(store, new NDList(x), true).singletonOrThrow();
        NDArray mean = encoded.get(new NDIndex(":, :" + latent));
        NDArray logVariance = encoded.get(new NDIndex(":, " + latent + ":"));
        NDArray noise = step.randomNormal(mean.getShape()).toDevice(mean.getDevice(), false);
        NDArray z = mean.add(noise.mul(logVariance.mul(0.5f).exp()));
        NDArray reconstruction = decoder.forward(store, new NDList(z), true).singletonOrThrow();
        NDArray squaredError = reconstruction.sub(x).square().sum(new int[]{1}).mul(0.5f);
        NDArray kl = logVariance.add(1).sub(mean.square()).sub(logVariance.exp()).sum(new int[]{1}).mul(-0.5f);
        return squaredError.add(kl.mul(beta));
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
        block.setInitializer(new XavierInitializer(), Parameter.Type.WEIGHT);
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
        if (manager == null) {
            throw new IllegalStateException("fit the model before embedding");
        }
        List<float[]> rows = new ArrayList<>();
        for (Batch batch : loader.epoch(0)) {
            try (NDManager step = manager.newSubManager()) {
                NDArray x = standardise(batch.toNDArray(step).toDevice(manager.getDevice(), false).reshape(batch.size(), pixels));
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

    /** Frees the parameters. */
    @Override
    public void close() {
        if (manager != null) {
            manager.close();
        }
    }

    /** Configures an {@link ImageVae}; every setting is optional. Defaults: 20 epochs, learning rate 1e-3. */
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
         */
        public ImageVae build() {
            validate();
            if (latent < 1 || hidden < 1 || beta < 0) {
                throw new IllegalArgumentException("latent and hidden must be positive and beta >= 0");
            }
            return new ImageVae(this);
        }
    }
}
