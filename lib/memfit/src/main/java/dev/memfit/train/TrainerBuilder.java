package dev.memfit.train;

import ai.djl.Device;
import dev.memfit.ProgressListener;

import java.util.Objects;
import java.util.function.Predicate;

/**
 * The settings every memfit trainer has: epochs, Adam's learning rate, seed, device, gradient accumulation, and
 * what to report while training. Each trainer's builder adds its own {@code setX} (required) and {@code optX}
 * (optional) settings and ends in {@code build()}.
 *
 * @param <B> the concrete builder, returned by every setter so calls chain
 */
public abstract class TrainerBuilder<B extends TrainerBuilder<B>> {

    int epochs;
    float learningRate;
    long seed = 1;
    Device device;
    int accumulation = 1;
    ProgressListener progress = ProgressListener.console();
    EpochListener epochListener = stats -> { };
    Predicate<? super EpochStats> stopWhen = stats -> false;
    Checkpoints checkpoints;
    boolean pinnedBatches = true;

    TrainerBuilder(int defaultEpochs, float defaultLearningRate) {
        this.epochs = defaultEpochs;
        this.learningRate = defaultLearningRate;
    }

    /**
     * This builder, typed as the concrete builder.
     *
     * @return this
     */
    protected abstract B self();

    /**
     * Sets the number of epochs.
     *
     * @param count at least 1
     * @return this builder
     */
    public B optEpochs(int count) {
        this.epochs = count;
        return self();
    }

    /**
     * Sets Adam's learning rate.
     *
     * @param rate positive
     * @return this builder
     */
    public B optLearningRate(double rate) {
        this.learningRate = (float) rate;
        return self();
    }

    /**
     * Sets the seed of the initial parameters and of the noise of training (default 1).
     *
     * @param value the seed
     * @return this builder
     */
    public B optSeed(long value) {
        this.seed = value;
        return self();
    }

    /**
     * Sets the device (default: a GPU when DJL sees one, else the CPU).
     *
     * @param target the device
     * @return this builder
     */
    public B optDevice(Device target) {
        this.device = target;
        return self();
    }

    /**
     * Whether, on a GPU, the loader's batch buffers are pinned (page-locked) so that batches reach the device by DMA
     * ({@link dev.memfit.PinnedMemory}; default true, as PyTorch's {@code pin_memory=True}). Pinned memory
     * cannot be paged out: turn it off on a host short of memory. Without a CUDA runtime nothing is pinned either way.
     *
     * @param pinned false to copy from pageable memory
     * @return this builder
     */
    public B optPinnedBatches(boolean pinned) {
        this.pinnedBatches = pinned;
        return self();
    }

    /**
     * Accumulates the gradients of k mini-batches before each optimizer step (default 1): the step is the one a
     * batch k times larger would take, at the memory cost of one mini-batch.
     *
     * @param microBatches k, at least 1
     * @return this builder
     */
    public B optGradientAccumulation(int microBatches) {
        this.accumulation = microBatches;
        return self();
    }

    /**
     * Sets where training reports its progress, one step per batch (default: {@link ProgressListener#console()}, a
     * bar in a terminal and in a notebook).
     *
     * @param listener the listener, {@link ProgressListener#silent()} for none
     * @return this builder
     */
    public B optProgress(ProgressListener listener) {
        this.progress = Objects.requireNonNull(listener, "listener");
        return self();
    }

    /**
     * Sets what is called after each epoch (default: nothing).
     *
     * @param listener receives each epoch's statistics
     * @return this builder
     */
    public B optEpochListener(EpochListener listener) {
        this.epochListener = Objects.requireNonNull(listener, "listener");
        return self();
    }

    /**
     * Stops training after the first epoch whose statistics meet a condition (default: never), for example
     * {@code stats -> stats.loss() < 0.1}. The condition is tested after the epoch listener was called.
     *
     * @param condition true to stop after this epoch
     * @return this builder
     */
    public B optStopWhen(Predicate<? super EpochStats> condition) {
        this.stopWhen = Objects.requireNonNull(condition, "condition");
        return self();
    }

    /**
     * Saves checkpoints as the policy says, and resumes from the newest valid one in its folder when {@code fit}
     * starts (default: none), e.g.
     * {@code Checkpoints.builder().setFolder(Path.of("runs/vae")).optEverySteps(500).optKeep(3).build()}. The loader given
     * to {@code fit} must not have started an epoch yet, so that it can continue where the checkpoint left off.
     *
     * @param policy when, where and how many
     * @return this builder
     */
    public B optCheckpoints(Checkpoints policy) {
        this.checkpoints = Objects.requireNonNull(policy, "policy");
        return self();
    }

    /** Checks that every sample's class is one of {@code classes}, naming the first that is not and the setting. */
    static void checkLabels(int[] labels, int classes, String setting) {
        for (int i = 0; i < labels.length; i++) {
            if (labels[i] < 0 || labels[i] >= classes) {
                throw new IllegalArgumentException("the label of sample " + i + " is " + labels[i]
                        + ", outside the " + classes + " classes of " + setting);
            }
        }
    }

    /** Checks the shared settings; each builder checks its own after these. */
    void validate() {
        if (epochs < 1) {
            throw new IllegalArgumentException("optEpochs(n) needs n >= 1, got " + epochs);
        }
        if (!(learningRate > 0)) {
            throw new IllegalArgumentException("optLearningRate(rate) needs a positive rate, got " + learningRate);
        }
        if (accumulation < 1) {
            throw new IllegalArgumentException("optGradientAccumulation(k) needs k >= 1 micro-batch, got " + accumulation);
        }
    }
}
