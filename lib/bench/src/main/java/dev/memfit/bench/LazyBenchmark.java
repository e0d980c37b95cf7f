package dev.memfit.bench;

import dev.memfit.source.LazySource;
import dev.memfit.source.Particles;
import dev.memfit.io.storage.PageCache;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.io.storage.Storage;
import dev.memfit.sample.ShuffledSampler;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.function.Supplier;

/**
 * Measurements of lazy loading: random batches through a {@link LazySource}, and reading the same files
 * sequentially for comparison.
 */
public final class LazyBenchmark {

    private LazyBenchmark() {
    }

    /**
     * A throughput reading.
     *
     * @param samples samples read
     * @param bytes bytes delivered (float32)
     * @param seconds wall time
     */
    public record Throughput(long samples, long bytes, double seconds) {
        /**
         * Samples per second.
         *
         * @return the rate
         */
        public double samplesPerSecond() {
            return samples / seconds;
        }

        /**
         * Gigabytes (1e9 bytes) per second.
         *
         * @return the rate
         */
        public double gigabytesPerSecond() {
            return bytes / seconds / 1e9;
        }
    }

    /**
     * Reads random batches (a seeded shuffle of all samples, cut into batches) through a lazy source.
     *
     * @param records where the samples are
     * @param storage makes the storage to read through (closed afterwards)
     * @param threads reader threads
     * @param batchSize samples per batch
     * @param batches how many batches to read (fewer if the data has fewer)
     * @param seed the shuffle seed
     * @return the reading
     */
    public static Throughput randomBatches(RecordIndex records, Supplier<Storage> storage, int threads, int batchSize,
                                           int batches, long seed) {
        return randomBatches(records, storage, threads, batchSize, batches, seed, 1);
    }

    /**
     * Reads random batches several times over the same open source and reports the last pass: the steady state,
     * after first-touch costs (opening files, mapping pages) are paid.
     *
     * @param records where the samples are
     * @param storage makes the storage to read through (closed afterwards)
     * @param threads reader threads
     * @param batchSize samples per batch
     * @param batches how many batches per pass (fewer if the data has fewer)
     * @param seed the shuffle seed of the first pass (later passes use the next seeds)
     * @param passes how many passes, at least 1
     * @return the reading of the last pass
     */
    public static Throughput randomBatches(RecordIndex records, Supplier<Storage> storage, int threads, int batchSize,
                                           int batches, long seed, int passes) {
        try (LazySource source = Particles.builder().setRecords(records).optStorage(storage.get()).optThreads(threads).lazy();
             Arena arena = Arena.ofShared()) {
            MemorySegment buffer = arena.allocate(batchSize * source.sampleBytes(), 64);
            Throughput last = null;
            for (int pass = 0; pass < passes; pass++) {
                long[] order = new ShuffledSampler(records.size(), seed + pass).indices(0);
                int count = (int) Math.min(batches, order.length / batchSize);
                long start = System.nanoTime();
                for (int b = 0; b < count; b++) {
                    source.readBatch(Arrays.copyOfRange(order, b * batchSize, (b + 1) * batchSize), buffer);
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                last = new Throughput((long) count * batchSize, (long) count * batchSize * source.sampleBytes(), seconds);
            }
            return last;
        }
    }

    /**
     * Reads whole files front to back in 8 MB requests: the fastest way the same bytes can come off storage.
     *
     * @param files the files
     * @param samples the samples they hold, for the rate
     * @return the reading
     */
    public static Throughput sequential(Iterable<Path> files, long samples) {
        long bytes = 0;
        long start = System.nanoTime();
        ByteBuffer buffer = ByteBuffer.allocateDirect(8 << 20);
        for (Path file : files) {
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                int n;
                while ((n = channel.read(buffer)) > 0) {
                    bytes += n;
                    buffer.clear();
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + file, e);
            }
        }
        return new Throughput(samples, bytes, (System.nanoTime() - start) / 1e9);
    }

    /**
     * Drops the files of an index from the page cache, so that the next reading is cold.
     *
     * @param records the index
     */
    public static void evict(RecordIndex records) {
        PageCache.evict(records.files());
    }
}
