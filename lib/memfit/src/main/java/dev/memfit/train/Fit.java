package dev.memfit.train;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.training.GradientCollector;
import dev.memfit.ProgressListener;
import dev.memfit.PyTorch;
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
    private final Checkpoints checkpoints;
    private final boolean pinnedBatches;

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
        this.checkpoints = settings.checkpoints;
        this.pinnedBatches = settings.pinnedBatches;
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
         * What the model counts its work in beside samples, for the progress bar's rate (a token model: "tokens").
         *
         * @return the unit, or null to show samples a second
         */
        default String workUnit() {
            return null;
        }

        /**
         * The work done in this process so far, in {@link #workUnit()}s (a running count the bar takes differences of).
         *
         * @return the count
         */
        default long workDone() {
            return 0;
        }

        /**
         * Whether the loop calls {@link #backwardOnDevice} instead of {@link #backward}.
         *
         * @return true for a model that leaves its losses on the device (default: false)
         */
        default boolean keepsLossOnDevice() {
            return false;
        }

        /**
         * As {@link #backward}, but returns the loss as a float32 scalar on the device, created in
         * {@link Step#batchScope()}: the loop keeps it and reads the losses of many mini-batches in one copy, so that
         * a GPU does not wait for every batch's loss before the host queues the next batch's work.
         *
         * @param batch the mini-batch
         * @param step the optimizer step the batch belongs to
         * @return the loss summed over the batch's samples, a scalar
         */
        default NDArray backwardOnDevice(Batch batch, Step step) {
            throw new UnsupportedOperationException("this model reads its losses at once");
        }

        /**
         * Takes one optimizer step on the gradients the step's mini-batches accumulated; gradient views go to
         * {@link Step#scope()}, freed afterwards.
         *
         * @param step the step, with its batch and sample counts
         */
        void update(Step step);

        /**
         * The arrays a checkpoint saves and a resume overwrites in place, by stable names: the parameters and the
         * optimizer's moments, live (not copies).
         *
         * @return float32 arrays in a fixed order (default: none, a model that cannot be checkpointed)
         */
        default java.util.Map<String, NDArray> stateArrays() {
            return java.util.Map.of();
        }

        /**
         * The counters of the optimizers (steps taken, for bias corrections).
         *
         * @return counters by name
         */
        default java.util.Map<String, Long> counters() {
            return java.util.Map.of();
        }

        /**
         * Continues the optimizers' counters from a checkpoint.
         *
         * @param counters as {@link #counters()} returned them
         */
        default void restoreCounters(java.util.Map<String, Long> counters) {
        }

        /**
         * The model's settings a checkpoint must share to be resumed, such as the number of topics.
         *
         * @return settings by name, as text
         */
        default java.util.Map<String, String> settings() {
            return java.util.Map.of();
        }
    }

    /** The engine every trainer runs on (its CPU results reproducible from a seed: see {@link PyTorch#engine()}). */
    static Engine engine() {
        return PyTorch.engine();
    }

    /** The first GPU DJL sees, else the CPU. */
    /**
     * Refuses a loader whose batches would not meet the model's float32 parameters: float64 batches (a float64 shard
     * folder or {@code .npy}) and float16 ones, which PyTorch will not multiply with float32 weights, and, unless
     * {@code integers}, integer batches (a model whose first operation on a batch, such as {@code log(1 + x)},
     * promotes integers to float32 accepts them).
     *
     * @param loader the training data
     * @param model the model, for the message ("the cell classifier")
     * @param integers whether integer batches are accepted
     * @throws IllegalArgumentException naming {@code optConvertTo(DType.FLOAT32)}
     */
    static void requireFloat32(Loader loader, String model, boolean integers) {
        dev.memfit.DType type = loader.outputType();
        boolean floating = type == dev.memfit.DType.FLOAT16 || type == dev.memfit.DType.FLOAT64;
        if (type != dev.memfit.DType.FLOAT32 && (floating || !integers)) {
            throw new IllegalArgumentException(model + " trains on float32 batches, and " + loader.describe() + " gives "
                    + type.name().toLowerCase(Locale.ROOT) + " ones; build the loader with "
                    + ".optConvertTo(DType.FLOAT32) (batches are " + type + ")");
        }
    }

    /**
     * A batch on the training device: a dense batch shares its memory on the CPU, then is copied there; a sparse one
     * (CSR) is densified there, so only the device holds its dense form.
     */
    static ai.djl.ndarray.NDArray onDevice(dev.memfit.data.Batch batch, ai.djl.ndarray.NDManager scope, Device target) {
        if (!batch.isSparse()) {
            return batch.toNDArray(scope).toDevice(target, false);
        }
        return batch.toNDArray(scope.getDevice().equals(target) ? scope : scope.newSubManager(target));
    }

    static Device defaultDevice() {
        return engine().defaultDevice();
    }

    /** Where the fit's notes and bar go. */
    ProgressListener progress() {
        return progress;
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
     * {@link Model#update}. With checkpoints set, first resumes from the newest valid one in their folder, and saves
     * as their policy says.
     *
     * @param loader the training data
     * @param parameters the manager of the model's parameters, on the training device; steps' arrays live in its
     *        sub-managers
     * @param model the model
     * @return the epochs' statistics
     */
    FitResult run(Loader loader, NDManager parameters, Model model) {
        Device target = parameters.getDevice();
        if (target.isGpu() && pinnedBatches) {
            loader.pinBuffers();   // batches then reach the GPU by DMA; pageable copies when nothing could be pinned
        }
        // Reseeded per fit so that the same loader order gives the same losses, whatever building the parameters
        // drew from the generator; each step reseeds again from its number (noise as a function of the step).
        seed();
        Run run = new Run();
        Checkpointing saver = checkpoints == null ? null : new Checkpointing(checkpoints, task, this, progress);
        try {
            if (saver != null) {
                saver.resume(run, loader, model);
                if (run.epoch > epochs) {
                    // the checkpoint went further than this fit asks: nothing is trained, and the run says so
                    progress.note(String.format(Locale.ROOT, "%s: the checkpoint has finished %d epochs, as many as or more "
                            + "than the %d asked for: nothing left to train (raise the epochs to train on, or use another "
                            + "checkpoint folder to start over)", task, run.epoch - 1, epochs));
                }
            }
            long start = System.nanoTime();
            long total = epochs * loader.batchesPerEpoch();
            try (ProgressListener.Task bar = progress.start(task, total, "batches")) {
                BarStatus status = new BarStatus(bar, model, target, run);
                bar.step(Math.min(total, (run.epoch - 1) * loader.batchesPerEpoch() + run.batches));
                // a resumed run that had stopped early (optStopWhen) stays stopped
                while (run.epoch <= epochs && !(run.batches == 0 && !run.history.isEmpty()
                        && stopWhen.test(run.history.getLast()))) {
                    EpochStats stats = epoch(run, loader, parameters, model, target, bar, status, saver);
                    run.history.add(stats);
                    run.nextEpoch();
                    status.epochDone(stats);
                    epochListener.onEpoch(stats);
                    if (saver != null && saver.due(run)) {
                        saver.save(run, loader, model);
                    }
                }
                if (saver != null) {
                    saver.finish(run, loader, model);
                }
            }
            double seconds = run.secondsBefore + (System.nanoTime() - start) / 1e9;
            return new FitResult(run.history, seconds, target, run.stepLosses(),
                    saver == null ? FitResult.CheckpointReport.NONE : saver.report());
        } finally {
            if (saver != null) {
                saver.close();
            }
        }
    }

    private EpochStats epoch(Run run, Loader loader, NDManager parameters, Model model, Device target,
                             ProgressListener.Task bar, BarStatus status, Checkpointing saver) {
        long start = System.nanoTime();
        long perEpoch = loader.batchesPerEpoch();
        Step step = null;
        PendingLosses losses = new PendingLosses(parameters);
        try {
            // The loader counts epochs from 0, and its shuffle follows that number.
            for (Batch batch : loader.epoch(run.epoch - 1L)) {
                if (step == null) {
                    step = new Step(parameters);
                    // The noise of a step (the VAE's) depends on the seed and the step's number only, so a resumed
                    // run draws what the uninterrupted one drew.
                    engine().setRandomSeed(stepSeed(run.globalSteps));
                }
                step.accumulate(model, batch, losses);
                run.batches++;
                run.samples += batch.size();
                if (step.batches() == accumulation) {
                    finishStep(run, step, model, losses);
                    step = null;
                    if (losses.full()) {
                        losses.flush(run);
                    }
                    if (saver != null && run.batches < perEpoch && saver.due(run)) {
                        losses.flush(run);
                        run.epochSeconds += (System.nanoTime() - start) / 1e9;
                        start = System.nanoTime();
                        saver.save(run, loader, model);
                    }
                }
                bar.step(1);
                status.during();
            }
            // A shorter last group still steps: no batch of the epoch is left out.
            if (step != null) {
                finishStep(run, step, model, losses);
                step = null;
            }
            losses.flush(run);
        } finally {
            if (step != null) {
                step.close();
            }
            losses.close();
        }
        // Between epochs, cached but unused GPU memory goes back to the driver (no-op on the CPU).
        DeviceMemory.releaseCache(target);
        run.epochSeconds += (System.nanoTime() - start) / 1e9;
        return new EpochStats(run.epoch, run.lossSum / Math.max(1, run.samples), run.epochSeconds, run.batches, run.steps,
                run.samples);
    }

    private static void finishStep(Run run, Step step, Model model, PendingLosses losses) {
        step.update(model);
        run.steps++;
        run.globalSteps++;
        run.sinceCheckpoint++;
        losses.endStep();
    }

    /**
     * The bar's message: after each epoch its loss, and within and after it the rate (samples, or the model's unit, a
     * second) and the memory held (the process's resident set; a GPU's used memory when training there), at most
     * every two seconds within an epoch, so that reading /proc costs nothing beside a step.
     */
    private static final class BarStatus {
        private static final long INTERVAL_NANOS = 2_000_000_000L;
        private final ProgressListener.Task bar;
        private final Model model;
        private final Device device;
        private final Run run;
        private long sinceNanos = System.nanoTime();
        private long sinceWork;
        private long sinceSamples;
        private long epochNanos = sinceNanos;
        private long epochWork;
        /** Samples of the epoch under way that a resumed fit had done before it stopped: not this process's work. */
        private long restoredSamples;
        private String lastLoss = "";

        BarStatus(ProgressListener.Task bar, Model model, Device device, Run run) {
            this.bar = bar;
            this.model = model;
            this.device = device;
            this.run = run;
            this.sinceWork = model.workDone();
            this.epochWork = sinceWork;
            this.sinceSamples = run.samples;
            this.restoredSamples = run.samples;
        }

        void during() {
            long now = System.nanoTime();
            if (now - sinceNanos < INTERVAL_NANOS) {
                return;
            }
            bar.message("epoch " + run.epoch + " · " + rate(now, sinceNanos, model.workDone() - sinceWork,
                    run.samples - sinceSamples) + " · " + memory() + lastLoss);
            sinceNanos = now;
            sinceWork = model.workDone();
            sinceSamples = run.samples;
        }

        void epochDone(EpochStats stats) {
            long now = System.nanoTime();
            bar.message(String.format(Locale.ROOT, "epoch %d loss %.4g", stats.epoch(), stats.loss()) + " · "
                    + rate(now, epochNanos, model.workDone() - epochWork, stats.samples() - restoredSamples) + " · " + memory());
            restoredSamples = 0;
            lastLoss = String.format(Locale.ROOT, " · loss %.4g (epoch %d)", stats.loss(), stats.epoch());
            epochNanos = now;
            sinceNanos = now;
            epochWork = model.workDone();
            sinceWork = epochWork;
            sinceSamples = run.samples;
        }

        private String rate(long now, long since, long work, long samples) {
            double seconds = Math.max(1e-9, (now - since) / 1e9);
            String unit = model.workUnit();
            double perSecond = (unit == null ? samples : work) / seconds;
            String figure = perSecond >= 1e6 ? String.format(Locale.ROOT, "%.2fM", perSecond / 1e6)
                    : perSecond >= 1e4 ? String.format(Locale.ROOT, "%.1fk", perSecond / 1e3)
                    : String.format(Locale.ROOT, "%,.0f", perSecond);
            return figure + " " + (unit == null ? "samples" : unit) + "/s";
        }

        private String memory() {
            dev.memfit.memory.MemorySample sample = dev.memfit.memory.MemoryProbe.now(device);
            String text = sample.rss() < 0 ? "" : "RSS " + dev.memfit.ProcessMemory.human(sample.rss());
            if (device != null && device.isGpu() && sample.device() > 0) {
                text += (text.isEmpty() ? "" : ", ") + "GPU " + dev.memfit.ProcessMemory.human(sample.device());
            }
            return text.isEmpty() ? "memory not measured" : text;
        }
    }

    /**
     * The losses of the mini-batches whose sums the run has not taken yet, in order, with the ends of their steps:
     * those a model left on the device stay there until {@link #flush} reads them all in one copy (one device sync
     * for up to {@link #LIMIT} steps instead of one a batch). The sums are then taken in the order the batches came,
     * each loss as the float it was, so the epoch's and the steps' losses are what reading them one by one gave.
     */
    private static final class PendingLosses implements AutoCloseable {
        /** Steps held before a flush: bounds the arrays kept on the device. */
        static final int LIMIT = 256;

        private final NDManager parameters;
        /** Losses the device buffer holds before a read; with LIMIT steps between reads, k micro-batches a step fit. */
        private static final int CAPACITY = 1024;

        private NDArray buffer;
        private int onBuffer;
        private double[] known = new double[64];
        private boolean[] fromDevice = new boolean[64];
        private long[] samples = new long[64];
        private boolean[] endsStep = new boolean[64];
        private int count;
        private int steps;
        private NDManager scope;
        private double stepLossSum;
        private long stepSamples;

        PendingLosses(NDManager parameters) {
            this.parameters = parameters;
        }

        void add(double loss, long batchSamples) {
            int at = next(batchSamples);
            known[at] = loss;
        }

        void add(NDArray loss, long batchSamples) {
            if (scope == null) {
                scope = parameters.newSubManager();
                buffer = scope.zeros(new ai.djl.ndarray.types.Shape(CAPACITY));
            }
            if (onBuffer == CAPACITY) {
                drain();
            }
            // copied into a buffer on the device (no sync), detached: the loss itself and everything its batch
            // allocated are freed with the batch's scope (kept arrays held a batch's worth of memory each)
            NDArray value = loss.stopGradient();
            buffer.set(new ai.djl.ndarray.index.NDIndex(onBuffer), value);
            value.close();
            onBuffer++;
            int at = next(batchSamples);
            fromDevice[at] = true;
        }

        /** Reads the losses waiting in the device buffer into the host's list, in one copy. */
        private void drain() {
            if (onBuffer == 0) {
                return;
            }
            float[] values;
            try (NDArray read = buffer.get(new ai.djl.ndarray.index.NDIndex("0:" + onBuffer))) {
                values = read.toFloatArray();
            }
            int r = 0;
            for (int i = 0; i < count; i++) {
                if (fromDevice[i]) {
                    known[i] = values[r++];
                    fromDevice[i] = false;
                }
            }
            onBuffer = 0;
        }

        private int next(long batchSamples) {
            if (count == samples.length) {
                int grown = count * 2;
                known = java.util.Arrays.copyOf(known, grown);
                fromDevice = java.util.Arrays.copyOf(fromDevice, grown);
                samples = java.util.Arrays.copyOf(samples, grown);
                endsStep = java.util.Arrays.copyOf(endsStep, grown);
            }
            fromDevice[count] = false;
            endsStep[count] = false;
            samples[count] = batchSamples;
            return count++;
        }

        void endStep() {
            if (count > 0) {
                endsStep[count - 1] = true;
            }
            steps++;
        }

        boolean full() {
            return steps >= LIMIT;
        }

        /** Adds the pending losses to the run's epoch sum and step losses, in order. */
        void flush(Run run) {
            drain();
            for (int i = 0; i < count; i++) {
                double loss = known[i];
                run.lossSum += loss;
                stepLossSum += loss;
                stepSamples += samples[i];
                if (endsStep[i]) {
                    run.addStepLoss(stepLossSum / Math.max(1, stepSamples));
                    stepLossSum = 0;
                    stepSamples = 0;
                }
            }
            count = 0;
            steps = 0;
            close();
        }

        /** Frees the losses held on the device. */
        @Override
        public void close() {
            onBuffer = 0;
            buffer = null;
            if (scope != null) {
                scope.close();
                scope = null;
            }
        }
    }

    /** The seed of a step's noise: the fit's seed mixed with the step number (SplitMix64's finaliser). */
    int stepSeed(long step) {
        long z = seed + 0x9E3779B97F4A7C15L * (step + 1);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return (int) ((z ^ (z >>> 31)) & 0x7fffffff);
    }

    /** The fit's settings a checkpoint must share to be resumed (the model adds its own). */
    java.util.Map<String, String> settings() {
        java.util.Map<String, String> settings = new java.util.LinkedHashMap<>();
        settings.put("trainer", task);
        settings.put("seed", Long.toString(seed));
        settings.put("gradient accumulation", Integer.toString(accumulation));
        return settings;
    }

    /**
     * Where a fit is: the epoch under way (from 1) and its sums so far, the steps over all epochs, the finished
     * epochs and the loss of every step. A checkpoint saves it; a resumed fit starts from it.
     */
    static final class Run {
        int epoch = 1;
        double lossSum;
        long batches;
        long samples;
        long steps;
        double epochSeconds;
        long globalSteps;
        long sinceCheckpoint;
        double secondsBefore;
        final List<EpochStats> history = new ArrayList<>();
        private double[] stepLosses = new double[64];
        private int stepLossCount;

        void nextEpoch() {
            epoch++;
            lossSum = 0;
            batches = 0;
            samples = 0;
            steps = 0;
            epochSeconds = 0;
        }

        void addStepLoss(double loss) {
            if (stepLossCount == stepLosses.length) {
                stepLosses = java.util.Arrays.copyOf(stepLosses, stepLosses.length * 2);
            }
            stepLosses[stepLossCount++] = loss;
        }

        double[] stepLosses() {
            return java.util.Arrays.copyOf(stepLosses, stepLossCount);
        }

        void restoreStepLosses(double[] losses) {
            stepLosses = java.util.Arrays.copyOf(losses, Math.max(64, losses.length));
            stepLossCount = losses.length;
        }
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

        private void accumulate(Model model, Batch batch, PendingLosses losses) {
            try (NDManager micro = scope.newSubManager()) {
                batchScope = micro;
                if (model.keepsLossOnDevice()) {
                    // taken out of the mini-batch's scope before it closes
                    losses.add(model.backwardOnDevice(batch, this), batch.size());
                } else {
                    losses.add(model.backward(batch, this), batch.size());
                }
                batches++;
                samples += batch.size();
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
