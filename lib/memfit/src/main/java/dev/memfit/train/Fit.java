package dev.memfit.train;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.training.GradientCollector;
import dev.memfit.ProgressListener;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;
import dev.memfit.memory.DeviceMemory;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;

/**
 * The one training loop of memfit's trainers: epochs (counted from 1), their timing and statistics, progress,
 * gradient accumulation, seeding, the release of the device's memory cache and the epoch listener. A model supplies
 * only what differs between models ({@link Model}): the forward pass, loss and backward pass of a mini-batch, and
 * the optimizer step.
 *
 * <p>DJL's {@code Trainer} does much of this, but it updates whole parameters through a {@code ParameterStore};
 * the topic model updates only the rows of a batch ({@link RowAdam}), so the loop is written here, once.
 */
final class Fit {

    private final String task;
    private final int epochs;
    private final long seed;
    private final Device device;
    private final int accumulation;
    private final ProgressListener progress;
    private final EpochListener epochListener;
    private final Predicate<? super EpochStats> stopWhen;

    /**
     * Reads the shared settings of a validated builder.
     *
     * @param task what the progress shows, such as "Topic model"
     * @param settings the builder
     */
    Fit(String task, TrainerBuilder<?> settings) {
        this.task = task;
        this.epochs = settings.epochs;
        this.seed = settings.seed;
        this.device = settings.device;
        this.accumulation = settings.accumulation;
        this.progress = settings.progress;
        this.epochListener = settings.epochListener;
        this.stopWhen = settings.stopWhen;
    }

    /** What a model does in the loop: the rest is the loop's. */
    interface Model {

        /**
         * Runs the forward pass, loss and backward pass of one mini-batch ({@link Step#backward}), adding to the
         * gradients of the step under way. Arrays created in {@link Step#batchScope()} are freed when this returns.
         *
         * @param batch the mini-batch
         * @param step the optimizer step the batch belongs to
         * @return the loss summed over the batch's samples, for the epoch's mean
         */
        double backward(Batch batch, Step step);

        /**
         * Takes one optimizer step on the gradients the step's mini-batches accumulated; gradient views go to
         * {@link Step#scope()}, freed afterwards.
         *
         * @param step the step, with its batch and sample counts
         */
        void update(Step step);
    }

    /** The engine every trainer runs on. */
    static Engine engine() {
        return Engine.getEngine("PyTorch");
    }

    /** The first GPU DJL sees, else the CPU. */
    static Device defaultDevice() {
        return engine().defaultDevice();
    }

    /** The device set on the builder, else the default one. */
    Device device() {
        return device != null ? device : defaultDevice();
    }

    /** The mini-batches per optimizer step. */
    int accumulation() {
        return accumulation;
    }

    /** Seeds DJL's random generator: called before parameters are built, and by {@link #run} before epoch 1. */
    void seed() {
        engine().setRandomSeed(Math.toIntExact(seed & 0x7fffffff));
    }

    /**
     * Trains a model whose parameters live in {@code parameters}: every epoch's mini-batches go through
     * {@link Model#backward}, and every {@code accumulation} of them (or fewer, at the end of an epoch) through one
     * {@link Model#update}.
     *
     * @param loader the training data
     * @param parameters the manager of the model's parameters, on the training device; steps' arrays live in its
     *        sub-managers
     * @param model the model
     * @return the epochs' statistics
     */
    FitResult run(Loader loader, NDManager parameters, Model model) {
        Device target = parameters.getDevice();
        // Reseeded per fit so that the same loader order gives the same losses (the VAE samples noise), whatever
        // building the parameters drew from the generator.
        seed();
        List<EpochStats> history = new ArrayList<>();
        long start = System.nanoTime();
        try (ProgressListener.Task bar = progress.start(task, epochs * loader.batchesPerEpoch(), "batches")) {
            for (int epoch = 1; epoch <= epochs; epoch++) {
                EpochStats stats = epoch(epoch, loader, parameters, model, target, bar);
                history.add(stats);
                bar.message(String.format(Locale.ROOT, "epoch %d loss %.4g", epoch, stats.loss()));
                epochListener.onEpoch(stats);
                if (stopWhen.test(stats)) {
                    break;
                }
            }
        }
        return new FitResult(history, (System.nanoTime() - start) / 1e9, target);
    }

    private EpochStats epoch(int epoch, Loader loader, NDManager parameters, Model model, Device target,
                             ProgressListener.Task bar) {
        long start = System.nanoTime();
        double lossSum = 0;
        long batches = 0;
        long samples = 0;
        long steps = 0;
        Step step = null;
        try {
            // The loader counts epochs from 0, and its shuffle follows that number.
            for (Batch batch : loader.epoch(epoch - 1L)) {
                if (step == null) {
                    step = new Step(parameters);
                }
                lossSum += step.accumulate(model, batch);
                batches++;
                samples += batch.size();
                if (step.batches() == accumulation) {
                    step.update(model);
                    step = null;
                    steps++;
                }
                bar.step(1);
            }
            // A shorter last group still steps: no batch of the epoch is left out.
            if (step != null) {
                step.update(model);
                step = null;
                steps++;
            }
        } finally {
            if (step != null) {
                step.close();
            }
        }
        // Between epochs, cached but unused GPU memory goes back to the driver (no-op on the CPU).
        DeviceMemory.releaseCache(target);
        return new EpochStats(epoch, lossSum / Math.max(1, samples), (System.nanoTime() - start) / 1e9, batches, steps,
                samples);
    }

    /**
     * One optimizer step under way: the gradient collector its mini-batches add to, and the scope of the arrays that
     * live until the update. Each mini-batch also gets a scope of its own, freed after its backward pass, so k
     * accumulated mini-batches hold the activations of one.
     */
    static final class Step implements AutoCloseable {

        private final GradientCollector collector;
        private final NDManager scope;
        private NDManager batchScope;
        private boolean collecting = true;
        private int batches;
        private long samples;

        private Step(NDManager parameters) {
            this.collector = engine().newGradientCollector();
            this.scope = parameters.newSubManager();
        }

        /**
         * The scope of arrays that must live until the update (such as rows whose gradients the update reads).
         *
         * @return the step's manager
         */
        NDManager scope() {
            return scope;
        }

        /**
         * The scope of the mini-batch in {@link Model#backward}, freed when it returns.
         *
         * @return the mini-batch's manager
         */
        NDManager batchScope() {
            if (batchScope == null) {
                throw new IllegalStateException("a batch scope exists only during Model.backward");
            }
            return batchScope;
        }

        /**
         * Adds the gradients of a loss to the step's.
         *
         * @param loss a scalar
         */
        void backward(NDArray loss) {
            collector.backward(loss);
        }

        /**
         * The mini-batches of this step so far (all of them, in {@link Model#update}).
         *
         * @return batches
         */
        int batches() {
            return batches;
        }

        /**
         * The samples of this step so far (all of them, in {@link Model#update}).
         *
         * @return samples
         */
        long samples() {
            return samples;
        }

        private double accumulate(Model model, Batch batch) {
            try (NDManager micro = scope.newSubManager()) {
                batchScope = micro;
                double loss = model.backward(batch, this);
                batches++;
                samples += batch.size();
                return loss;
            } finally {
                batchScope = null;
            }
        }

        private void update(Model model) {
            try {
                stopCollecting();
                model.update(this);
            } finally {
                close();
            }
        }

        private void stopCollecting() {
            if (collecting) {
                collecting = false;
                collector.close();
            }
        }

        /** Ends the step without an update (after a failure): one collector may collect at a time. */
        @Override
        public void close() {
            stopCollecting();
            scope.close();
        }
    }
}
