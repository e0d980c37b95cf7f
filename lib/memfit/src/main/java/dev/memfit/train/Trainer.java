package dev.memfit.train;

import dev.memfit.data.Loader;

/**
 * A model that trains on the batches of a {@link Loader}: {@link TopicModel}, {@link ImageVae},
 * {@link CellClassifier}. Each holds native memory (its parameters, or its fitted results) until closed.
 */
public interface Trainer extends AutoCloseable {

    /**
     * Trains on the batches a loader yields, for the epochs the builder set; the loader's sampler and batch size
     * drive the mini-batches.
     *
     * @param loader the training data
     * @return what each epoch did, and the totals
     * @throws IllegalStateException when the trainer is closed
     */
    FitResult fit(Loader loader);

    /** Frees the trainer's native memory. Idempotent; the trainer cannot be used afterwards. */
    @Override
    void close();
}
