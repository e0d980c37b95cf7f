package dev.memfit.source;

import dev.memfit.MemfitException;

import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;

import java.lang.foreign.MemorySegment;

/**
 * A view of some samples of another source, renumbered from 0: train on a random subset without copying anything.
 */
public final class SubsetSource implements SampleSource {

    private final SampleSource base;
    private final long[] indices;
    private final boolean ownsBase;

    /**
     * Creates the view.
     *
     * @param base the full source
     * @param indices the samples to keep, each in {@code [0, base.size())}
     * @param ownsBase whether closing the view closes the base
     */
    public SubsetSource(SampleSource base, long[] indices, boolean ownsBase) {
        for (int position = 0; position < indices.length; position++) {
            long index = indices[position];
            if (index < 0 || index >= base.size()) {
                throw new MemfitException("subset of " + base.describe() + ": expected indices in [0, " + base.size()
                        + "), found index " + index + " at position " + position);
            }
        }
        this.base = base;
        this.indices = indices.clone();
        this.ownsBase = ownsBase;
    }

    /**
     * The index in the base source of a subset sample.
     *
     * @param index the subset index
     * @return the base index
     */
    public long baseIndex(long index) {
        return indices[Math.toIntExact(index)];
    }

    @Override
    public long size() {
        return indices.length;
    }

    @Override
    public Shape sampleShape() {
        return base.sampleShape();
    }

    @Override
    public DType dtype() {
        return base.dtype();
    }

    @Override
    public void read(long index, MemorySegment into) {
        base.read(baseIndex(index), into);
    }

    @Override
    public void readBatch(long[] batch, MemorySegment into) {
        base.readBatch(mapped(batch), into);
    }

    private long[] mapped(long[] batch) {
        long[] mapped = new long[batch.length];
        for (int i = 0; i < batch.length; i++) {
            mapped[i] = baseIndex(batch[i]);
        }
        return mapped;
    }

    @Override
    public boolean readsFromMemory() {
        return base.readsFromMemory();
    }

    @Override
    public java.util.Optional<SparseRows> sparseRows() {
        return base.sparseRows().map(rows -> new SparseRows() {
            @Override
            public long storedValues() {
                return rows.storedValues(indices);
            }

            @Override
            public long storedValues(long[] batch) {
                return rows.storedValues(mapped(batch));
            }

            @Override
            public long read(long[] batch, MemorySegment values, MemorySegment columns, MemorySegment rowOffsets) {
                return rows.read(mapped(batch), values, columns, rowOffsets);
            }
        });
    }

    @Override
    public String fingerprint() {
        return indices.length + " samples (indices hash " + java.util.Arrays.hashCode(indices) + ") of " + base.fingerprint();
    }

    @Override
    public String describe() {
        return indices.length + " of " + base.describe();
    }

    /**
     * A subset scattered over the base (its samples span more than twice their number) is read at random whatever the
     * order; a dense one, such as a range, is read as the order says.
     */
    @Override
    public void expectReads(dev.memfit.io.storage.PageCache.ReadAdvice order) {
        base.expectReads(scattered() ? dev.memfit.io.storage.PageCache.ReadAdvice.RANDOM : order);
    }

    private boolean scattered() {
        if (indices.length == 0) {
            return false;
        }
        long low = Long.MAX_VALUE;
        long high = Long.MIN_VALUE;
        for (long index : indices) {
            low = Math.min(low, index);
            high = Math.max(high, index);
        }
        return high - low + 1 > 2L * indices.length;
    }

    @Override
    public void close() {
        if (ownsBase) {
            base.close();
        }
    }
}
