package dev.memfit.train;

import ai.djl.Device;

/**
 * The settings every memfit trainer has: epochs, Adam's learning rate, seed and device.
 *
 * @param <B> the concrete builder, returned by every setter so calls chain
 */
public abstract class TrainerBuilder<B extends TrainerBuilder<B>> {

    int epochs;
    float learningRate;
    long seed = 1;
    Device device;
    int accumulation = 1;

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
     * Sets the seed of the initial parameters (default 1).
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
     * Accumulates the gradients of k mini-batches before each optimizer step (default 1): the effective batch is k
     * times the loader's, at the memory cost of one.
     *
     * @param microBatches k, at least 1
     * @return this builder
     */
    public B optGradientAccumulation(int microBatches) {
        this.accumulation = microBatches;
        return self();
    }

    /** Checks the shared settings; subclasses add theirs. */
    void validate() {
        if (epochs < 1) {
            throw new IllegalArgumentException("epochs must be at least 1, got " + epochs);
        }
        if (!(learningRate > 0)) {
            throw new IllegalArgumentException("learning rate must be positive, got " + learningRate);
        }
        if (accumulation < 1) {
            throw new IllegalArgumentException("gradient accumulation must be at least 1 micro-batch, got " + accumulation);
        }
    }
}
