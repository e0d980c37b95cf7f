package dev.memfit.data;

import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.source.NpySource;
import dev.memfit.source.SampleSource;

import java.lang.foreign.MemorySegment;

/**
 * A {@code .npy} object staged whole into the cache and memory-mapped there: the mapped local reader, unchanged, on
 * the verified copy (its MD5 checked against the ETag when staged), pinned against eviction until closed. Named by its
 * URI; its fingerprint is that of a local file of the same name and header, as the bytes are the same.
 */
final class StagedNpySource implements SampleSource {

    private final ObjectUri uri;
    private final StagedFile staged;
    private final NpySource mapped;

    private StagedNpySource(ObjectUri uri, StagedFile staged, NpySource mapped) {
        this.uri = uri;
        this.staged = staged;
        this.mapped = mapped;
    }

    /**
     * Stages an object (a hit when the cache holds a checked copy) and maps it.
     *
     * @param uri the object
     * @param cache the cache to use and leave open, or null for {@link ObjectCache#fromEnvironment()} (closed with
     *        the source)
     * @return the source, to be closed
     */
    static StagedNpySource open(ObjectUri uri, ObjectCache cache) {
        StagedFile staged = StagedFile.of(uri, cache);
        try {
            return new StagedNpySource(uri, staged, NpySource.mapped(staged.file()));
        } catch (RuntimeException e) {
            // an object that is not a .npy: named by its address, not only by the cache's name for the copy
            RuntimeException failure = e instanceof InvalidFileException bad
                    ? new InvalidFileException(uri.toPath(), bad.offset(), "a .npy array",
                            "something else (" + bad.getMessage() + ")", bad)
                    : e;
            try {
                staged.close();
            } catch (RuntimeException closing) {
                failure.addSuppressed(closing);
            }
            throw failure;
        }
    }

    @Override
    public long size() {
        return mapped.size();
    }

    @Override
    public Shape sampleShape() {
        return mapped.sampleShape();
    }

    @Override
    public DType dtype() {
        return mapped.dtype();
    }

    @Override
    public void read(long index, MemorySegment into) {
        mapped.read(index, into);
    }

    /** As the mapped local copy does: from memory unless it is larger than the memory left. */
    @Override
    public boolean readsFromMemory() {
        return mapped.readsFromMemory();
    }

    /** Passed on to the mapped local copy: a copy larger than memory is advised the order and let go of as read. */
    @Override
    public void expectReads(dev.memfit.io.storage.PageCache.ReadAdvice order) {
        mapped.expectReads(order);
    }

    @Override
    public void readBatch(long[] indices, MemorySegment into) {
        mapped.readBatch(indices, into);
    }

    @Override
    public String describe() {
        return "mapped " + uri + " (staged in the cache)";
    }

    @Override
    public String fingerprint() {
        return uri.toPath().getFileName() + " (" + mapped.array().header() + ")"
                + dev.memfit.source.SampleSource.content(mapped.array().sampledChecksum());
    }

    @Override
    public void close() {
        try {
            mapped.close();
        } finally {
            staged.close();
        }
    }
}
