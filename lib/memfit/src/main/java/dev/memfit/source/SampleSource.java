package dev.memfit.source;

import dev.memfit.io.storage.PageCache;

import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;

import java.lang.foreign.MemorySegment;

/**
 * Random access to fixed-shape samples, possibly far larger than memory.
 *
 * <p>Samples are delivered in C order and the platform's byte order, whatever the storage uses. Reads are
 * thread-safe. Sizes and indices are {@code long}.
 */
public interface SampleSource extends AutoCloseable {

    /**
     * The number of samples.
     *
     * @return the sample count
     */
    long size();

    /**
     * The shape of one sample, such as {@code (2000)} for a row of a matrix.
     *
     * @return the sample shape
     */
    Shape sampleShape();

    /**
     * The element type.
     *
     * @return the dtype
     */
    DType dtype();

    /**
     * The size of one sample in bytes.
     *
     * @return shape size times element size
     */
    default long sampleBytes() {
        return sampleShape().size() * dtype().byteSize();
    }

    /**
     * The size of the whole data set in bytes.
     *
     * @return samples times bytes per sample
     */
    default long totalBytes() {
        return Math.multiplyExact(size(), sampleBytes());
    }

    /**
     * Copies one sample.
     *
     * @param index the sample index in {@code [0, size())}
     * @param into where to write {@link #sampleBytes()} bytes, at offset 0
     */
    void read(long index, MemorySegment into);

    /**
     * Copies several samples one after the other; sources override it to coalesce I/O.
     *
     * @param indices the sample indices, in the order wanted
     * @param into where to write {@code indices.length * sampleBytes()} bytes
     */
    default void readBatch(long[] indices, MemorySegment into) {
        long bytes = sampleBytes();
        for (int i = 0; i < indices.length; i++) {
            read(indices[i], into.asSlice(i * bytes, bytes));
        }
    }

    /**
     * Whether {@link #readBatch} copies its samples from memory (a mapped file the page cache can hold, an array held
     * in RAM), each sample independent of the others, so that several threads can each read a part of one batch at no
     * extra cost. The random-access loader then splits a batch between its readers instead of handing whole batches
     * over. False (the default) for sources whose {@code readBatch} gathers I/O or decodes chunks for a batch as a
     * whole: split, they would read or decode the same blocks twice; and for mapped files larger than the memory left
     * to this process, whose pages come from storage as they are touched (split, epochs in file order read slower
     * inside a memory limit). The loader asks once, when it is built.
     *
     * @return true when a batch may be read in parts
     */
    default boolean readsFromMemory() {
        return false;
    }

    /**
     * A hint from the loader, before an epoch: how it will read the samples. {@code NORMAL} in runs of consecutive
     * samples (file order, block shuffling), {@code RANDOM} one by one at random places (shuffled, weighted, a rank's
     * shuffled shards); {@code SEQUENTIAL} for a source read once front to back. Sources that map files pass it on to the kernel
     * ({@link PageCache#advise}) when their files do not fit in the memory this process may use: then a random sample
     * reads its own pages, not the device's read-ahead window around it (8 MiB on some disks, thousands of times the
     * sample). Data that fits keeps the default read-ahead, which fills the page cache fastest. The default does
     * nothing.
     *
     * @param order how the samples will be read
     */
    default void expectReads(PageCache.ReadAdvice order) {
    }

    /**
     * The samples as sparse rows, for a source that stores them sparse (see {@link SparseRows}); empty for dense data.
     *
     * @return the sparse rows, or empty
     */
    default java.util.Optional<SparseRows> sparseRows() {
        return java.util.Optional.empty();
    }

    /**
     * A one-line description for tables and messages, such as {@code mapped counts.npy}.
     *
     * @return the description
     */
    default String describe() {
        return getClass().getSimpleName();
    }

    /**
     * The part of a {@link #fingerprint()} that stands for the data's bytes, so that a file of the same name, shape and
     * size with other values is other data.
     *
     * @param checksum a checksum of the data (or of the checksums it records)
     * @return text to append to a fingerprint
     */
    static String content(long checksum) {
        return ", content crc32c " + Long.toHexString(checksum);
    }

    /**
     * A fingerprint without its {@link #content(long)} parts: what fingerprints written before they had one held.
     *
     * @param fingerprint a fingerprint
     * @return it without content parts (the same text when it has none)
     */
    static String withoutContent(String fingerprint) {
        return fingerprint.replaceAll(", content crc32c [0-9a-f]+", "");
    }

    /**
     * What identifies the data, for resuming a run from a saved {@link dev.memfit.data.LoaderState}: the same data
     * read another way (mapped or loaded, on another machine) has the same fingerprint; other data, or the same file
     * rewritten with another size, does not. The default is the description, sample count, shape and type.
     *
     * @return a one-line fingerprint
     */
    default String fingerprint() {
        return describe() + ": " + size() + " samples of " + sampleShape() + " " + dtype();
    }

    /**
     * Releases files and memory.
     */
    @Override
    void close();
}
