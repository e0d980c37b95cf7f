package dev.memfit.data;

import dev.memfit.MemfitException;

import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;

import java.util.Iterator;

/**
 * Epochs of mini-batches, whatever they are read from: the one batch pipeline every source ends in.
 *
 * <p>Every source ({@code .npy} in memory or mapped, lazy particle stacks, packed records, shards, the cells of an
 * {@code .h5ad} or a {@code .zarr} store) is read in the order a {@link dev.memfit.sample.Sampler} gives, on background
 * threads; streaming a file larger than memory is an order (block shuffling), not another pipeline. Batch buffers are
 * off-heap and reused, so a loader's memory ({@link #bufferMemory()}) is a few batches whatever the size of the data.
 * Build one with {@link Datasets}:
 *
 * <pre>{@code
 * try (Loader loader = Datasets.npy(path).mapped().optBatchSize(256).optShuffle(42).optPrefetch(2).build()) {
 *     for (Batch batch : loader.epoch(0)) {
 *         try (NDManager step = manager.newSubManager()) {
 *             NDArray x = batch.toNDArray(step);
 *         }
 *     }
 * }
 * }</pre>
 */
public final class Loader implements AutoCloseable {

    private final Pipeline pipeline;
    private Epoch active;
    private long activeEpoch;
    /** Where the first epoch starts, from {@link #resumeFrom(LoaderState)}; null: epoch 0 from its start. */
    private LoaderState resume;
    /** The state when the loader was closed: what {@link #state()} keeps answering after {@link #close()}. */
    private LoaderState closedState;

    Loader(Pipeline pipeline) {
        this.pipeline = pipeline;
    }

    /** The pipeline behind this loader (for the package's tests). */
    Pipeline pipeline() {
        return pipeline;
    }

    /**
     * The number of samples in the data (one epoch visits {@link #batchesPerEpoch()} batches of them).
     *
     * @return samples
     */
    public long samples() {
        return pipeline.samples();
    }

    /**
     * The shape of one sample, without the batch dimension.
     *
     * @return the sample shape
     */
    public Shape sampleShape() {
        return pipeline.sampleShape();
    }

    /**
     * What identifies the data this loader reads ({@link dev.memfit.source.SampleSource#fingerprint()}): the text a
     * saved {@link LoaderState} compares, for anything else that must notice other data of the same shape.
     *
     * @return a one-line fingerprint
     */
    public String fingerprint() {
        return pipeline.fingerprint();
    }

    /**
     * What the batches are read from and how, for logs and notebooks.
     *
     * @return a one-line description
     */
    public String describe() {
        return pipeline.describe();
    }

    /**
     * The samples per batch (the last batch of an epoch may be smaller unless the loader drops it).
     *
     * @return the batch size
     */
    public int batchSize() {
        return pipeline.batchSize();
    }

    /**
     * The number of batches each epoch yields.
     *
     * @return batches per epoch
     */
    public long batchesPerEpoch() {
        return pipeline.batchesPerEpoch();
    }

    /**
     * The element type of batches.
     *
     * @return the output dtype
     */
    public DType outputType() {
        return pipeline.outputType();
    }

    /**
     * The off-heap memory the loader holds: its batch buffers.
     *
     * @return bytes
     */
    public long bufferMemory() {
        return pipeline.bufferMemory();
    }

    /**
     * Pins the loader's batch buffers in place for copies to a GPU ({@link dev.memfit.PinnedMemory}), so
     * that a batch reaches the device by DMA at the link's speed; they are unpinned when the loader closes. The
     * trainers call it when they train on a GPU; calling it again does nothing. Buffers of random-access loaders are
     * pinned; a streaming loader's are not (yet).
     *
     * @return the bytes pinned by this loader in all, 0 when nothing could be pinned (no CUDA runtime, say)
     */
    public long pinBuffers() {
        return pipeline.pinBuffers();
    }

    /**
     * The batches of one epoch. One epoch is iterated at a time per loader: starting another epoch (for example
     * after leaving a loop early) abandons the previous one and reclaims its buffers.
     *
     * @param epoch the epoch number, which with the seed fixes the order
     * @return the batches, read ahead in the background while iterated
     */
    public Iterable<Batch> epoch(long epoch) {
        return () -> start(epoch);
    }

    private synchronized Epoch start(long epoch) {
        long firstBatch = 0;
        if (resume != null) {
            if (epoch == resume.epoch()) {
                firstBatch = resume.batchesDone();
            } else if (!(epoch == resume.epoch() + 1 && resume.batchesDone() >= pipeline.batchesPerEpoch())) {
                throw new MemfitException("this loader resumes at batch " + resume.batchesDone() + " of epoch " + resume.epoch()
                        + " (from its saved state), but epoch " + epoch + " was asked for: start with epoch " + resume.epoch());
            }
        }
        if (active != null) {
            active.abandon();
        }
        // the loader's own state changes only once the pipeline has started the epoch
        Epoch next = pipeline.start(epoch, firstBatch);
        resume = null;
        activeEpoch = epoch;
        active = next;
        return active;
    }

    /**
     * Where this loader is: the epoch and the batches of it handed out so far (a finished epoch is the start of the
     * next), with what identifies the data and the order. Save it with a checkpoint; a new loader over the same data
     * and settings continues from it with {@link #resumeFrom(LoaderState)}.
     *
     * @return the state, small and JSON-serialisable
     */
    public synchronized LoaderState state() {
        if (closedState != null) {
            return closedState;
        }
        long epoch = 0;
        long done = 0;
        if (active != null) {
            epoch = activeEpoch;
            done = active.position();
        } else if (resume != null) {
            epoch = resume.epoch();
            done = resume.batchesDone();
        }
        // a finished epoch is the start of the next, whichever way the position came
        if (done >= pipeline.batchesPerEpoch()) {
            epoch++;
            done = 0;
        }
        return new LoaderState(pipeline.fingerprint(), pipeline.samples(), pipeline.orderSettings(), pipeline.batchSize(),
                pipeline.dropLast(), epoch, done, pipeline.rank(), pipeline.worldSize());
    }

    /**
     * Continues from a saved state: the next {@link #epoch(long)} must be the saved epoch, and it starts at the batch
     * after the last one handed out, with the same batches an uninterrupted run would have produced (the order is a
     * function of the seed and the epoch: a random-access loader skips to the batch).
     *
     * <p>A data-parallel job ({@link dev.memfit.sample.DistributedShardSampler}) may resume with another world size
     * (and so rank) at an epoch boundary, a state with {@code batchesDone} 0 (as {@link #state()} saves a finished
     * epoch): the next epoch is simply partitioned for the new world. Inside an epoch the rank's remaining samples
     * depend on the partition, so there another world size or rank is refused, naming both.
     *
     * <p>An {@code .h5ad} stream resumes inside an epoch too: it replays the epoch's chunk order and shuffle-buffer
     * draws on cell indices (no reads) up to the saved batch, then reads what its buffer holds at that point.
     *
     * @param state a state from {@link #state()} of a loader over the same data with the same settings
     * @return this loader
     * @throws MemfitException when an epoch has already been started (a state loaded after iterating would be ignored
     *                         by the running epoch, so it is refused), when the data or settings differ (named), or
     *                         when the world size or rank differ inside an epoch
     */
    public synchronized Loader resumeFrom(LoaderState state) {
        if (closedState != null) {
            throw new MemfitException("resumeFrom on a closed loader: build a new loader and resume it before iterating");
        }
        if (active != null) {      // set by the first epoch(...), and kept until close
            throw new MemfitException("resumeFrom must be called before the first epoch(...) of a loader: this one has "
                    + "already started epoch " + activeEpoch + ", which would ignore the saved position; build a new loader and "
                    + "resume it before iterating");
        }
        java.util.List<String> differences = state.differencesFrom(state());
        if (!differences.isEmpty()) {
            throw new MemfitException("cannot resume from a state saved with other data or settings: "
                    + String.join("; ", differences));
        }
        java.util.List<String> partition = state.partitionDifferencesFrom(state());
        if (!partition.isEmpty() && state.batchesDone() > 0) {
            throw new MemfitException("cannot resume inside epoch " + state.epoch() + " (at batch " + state.batchesDone()
                    + ") with another partition of the job: " + String.join("; ", partition) + "; a rank's samples inside "
                    + "an epoch depend on the partition, so resume from a state saved at an epoch boundary (batch 0), "
                    + "where the next epoch is partitioned for the new world, or with the saved rank and world size");
        }
        long batches = pipeline.batchesPerEpoch();
        if (state.batchesDone() > batches) {
            throw new MemfitException("saved state is at batch " + state.batchesDone() + " of epoch " + state.epoch()
                    + ", but an epoch has " + batches + " batches");
        }
        // a finished epoch (batchesDone == batches) continues with an empty epoch(state.epoch()) or with the next
        resume = state;
        return this;
    }

    /** For builders: this loader resumed from a state (none: as it is), or closed when the state is refused. */
    Loader resumingFrom(LoaderState state) {
        if (state != null) {
            try {
                resumeFrom(state);
            } catch (RuntimeException e) {
                close();    // closes the source too when the loader owns it
                throw e;
            }
        }
        return this;
    }

    /**
     * Stops the reader threads and frees the buffers; closes the source when the loader opened it. {@link #state()}
     * keeps answering with the position at closing, so a final checkpoint can be written afterwards; closing twice
     * does nothing.
     */
    @Override
    public synchronized void close() {
        if (closedState != null) {
            return;
        }
        closedState = state();
        if (active != null) {
            active.abandon();
            active = null;
        }
        pipeline.close();
    }

    @Override
    public String toString() {
        return "Loader[" + pipeline + "]";
    }

    /** How batches are produced: {@link RandomAccessPipeline}, in sampler order on background threads. */
    interface Pipeline extends AutoCloseable {
        long samples();

        Shape sampleShape();

        String describe();

        int batchSize();

        long batchesPerEpoch();

        DType outputType();

        long bufferMemory();

        /** Pins the batch buffers for copies to a GPU, once; the bytes pinned (0: none). */
        default long pinBuffers() {
            return 0;
        }

        /** What identifies the data ({@link dev.memfit.source.SampleSource#fingerprint()}). */
        String fingerprint();

        /** The settings that fix the order: the sampler's, or the stream's chunking, buffer and seed. */
        String orderSettings();

        /** The rank of a data-parallel job this reads for (0: none). */
        default int rank() {
            return 0;
        }

        /** The ranks of that job (1: none). */
        default int worldSize() {
            return 1;
        }

        boolean dropLast();

        /**
         * Starts an epoch at one of its batches; the loader has abandoned the previous one already.
         *
         * @param epoch the epoch
         * @param firstBatch the first batch to hand out (0 for the whole epoch), as numbered in an uninterrupted epoch
         */
        Epoch start(long epoch, long firstBatch);

        @Override
        void close();
    }

    /** The batches of one epoch, which can be left early. */
    interface Epoch extends Iterator<Batch> {
        /** Waits for reads in flight and gives every buffer back, so the next epoch can start. */
        void abandon();

        /** The number of the next batch this epoch hands out (the batches before it have been handed out). */
        long position();
    }
}
