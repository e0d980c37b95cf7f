package dev.memfit.data;

import dev.memfit.PythonPeer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The cells of an {@code .h5ad} streamed block-shuffled and resumed inside an epoch hand out the rest of the epoch
 * exactly as an uninterrupted loader does, cell for cell and byte for byte: for sparse and dense X, stored contiguous
 * or gzip-chunked (as anndata writes them), with windows from one block to more than the file, other thread counts
 * and prefetch, and a short last batch kept or dropped.
 */
class AnnDataResumeTest {

    @TempDir
    static Path dir;

    private static final int CELLS = 1_501;
    private static final int GENES = 40;

    @BeforeAll
    static void write() {
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                d = sys.argv[1]
                rng = np.random.default_rng(3)
                x = ((rng.random((%d, %d)) < 0.15) * rng.integers(1, 50, (%d, %d))).astype(np.float32)
                obs = pd.DataFrame(index=['c%%d' %% i for i in range(x.shape[0])])
                var = pd.DataFrame(index=['g%%d' %% j for j in range(x.shape[1])])
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=var).write_h5ad(d + '/sparse.h5ad')
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=var).write_h5ad(d + '/sparse-gzip.h5ad', compression='gzip')
                ad.AnnData(x, obs=obs, var=var).write_h5ad(d + '/dense.h5ad')
                ad.AnnData(x, obs=obs, var=var).write_h5ad(d + '/dense-gzip.h5ad', compression='gzip')
                print('ok')
                """.formatted(CELLS, GENES, CELLS, GENES), dir));
    }

    /** One batch: number, cells and bytes. */
    private record Seen(long number, long[] indices, byte[] bytes) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Seen s && number == s.number && Arrays.equals(indices, s.indices) && Arrays.equals(bytes, s.bytes);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(number);
        }

        @Override
        public String toString() {
            return "batch " + number + " " + Arrays.toString(Arrays.copyOf(indices, Math.min(5, indices.length)));
        }
    }

    /** Fails at the first batch that differs, saying whether its cells or only its bytes do. */
    private static void assertSameBatches(List<Seen> expected, List<Seen> actual, String what) {
        for (int i = 0; i < Math.min(expected.size(), actual.size()); i++) {
            Seen e = expected.get(i);
            Seen a = actual.get(i);
            if (!e.equals(a)) {
                throw new AssertionError(what + ": " + (Arrays.equals(e.indices(), a.indices())
                        ? "the bytes of " + e + " differ" : "the cells of " + e + " differ, found " + a));
            }
        }
        assertEquals(expected.size(), actual.size(), what + ": batches");
    }

    private static List<Seen> epoch(Loader loader, long epoch) {
        List<Seen> seen = new ArrayList<>();
        for (Batch batch : loader.epoch(epoch)) {
            seen.add(new Seen(batch.number(), batch.indices().clone(), batch.data().toArray(ValueLayout.JAVA_BYTE)));
        }
        return seen;
    }

    /**
     * Resumes epoch 1 of the stream at its first, last and a few random batches (and after it ended), from states
     * saved by an uninterrupted run, and compares the rest with that run's; the resumed loader may read with other
     * threads and buffer kind ({@code resumed}), which must not change the order.
     */
    private static void resumesExactly(Supplier<LoaderBuilder> original, Supplier<LoaderBuilder> resumed, long seed) {
        List<Seen> whole;
        LoaderState start;
        long batches;
        try (Loader loader = original.get().build()) {
            epoch(loader, 0);
            start = loader.state();
            whole = epoch(loader, 1);
            batches = loader.batchesPerEpoch();
        }
        assertEquals(batches, whole.size());
        SplittableRandom random = new SplittableRandom(seed);
        long[] points = {1, batches - 1, batches, 1 + random.nextLong(batches - 1), 1 + random.nextLong(batches - 1)};
        for (long at : points) {
            LoaderState state = new LoaderState(start.source(), start.samples(), start.sampler(), start.batchSize(),
                    start.dropLast(), 1, at);
            try (Loader loader = resumed.get().optResumeFrom(state).build()) {
                List<Seen> rest = epoch(loader, 1);
                assertSameBatches(whole.subList((int) at, whole.size()), rest, "epoch 1 resumed at batch " + at + " of " + batches
                        + " (" + loader.describe() + ")");
                assertEquals(new LoaderState(start.source(), start.samples(), start.sampler(), start.batchSize(),
                        start.dropLast(), 2, 0), loader.state(), "after the resumed epoch");
            }
        }
    }

    @Test
    void sparseAndDenseFilesStoredPlainOrGzipResumeInsideAnEpoch() {
        for (String name : List.of("sparse.h5ad", "sparse-gzip.h5ad", "dense.h5ad", "dense-gzip.h5ad")) {
            Path file = dir.resolve(name);
            Supplier<LoaderBuilder> stream = () -> Datasets.h5ad(file).optBlockShuffle(64, 5)
                    .optBatchSize(50).optShuffle(12);
            resumesExactly(stream, stream, name.hashCode());
        }
    }

    @Test
    void everyWindowResumesInsideAnEpoch() {
        Path file = dir.resolve("sparse-gzip.h5ad");
        int[][] settings = {
                // block, fetch factor, batch, prefetch
                {64, 2, 32, 1},         // a window of one block
                {7, 1, 30, 3},          // the batch is the whole window
                {1, 2, 3, 2},           // blocks of one cell
                {100, 8, 128, 2},       // most of the file in a window
                {500, 40, 64, 4},       // a window larger than the file
        };
        for (int[] s : settings) {
            for (boolean dropLast : new boolean[]{false, true}) {
                Supplier<LoaderBuilder> stream = () -> Datasets.h5ad(file).optBlockShuffle(s[0], s[1])
                        .optBatchSize(s[2]).optPrefetch(s[3]).optDropLast(dropLast).optShuffle(5);
                resumesExactly(stream, stream, Arrays.hashCode(s));
            }
        }
    }

    @Test
    void otherThreadsOrNoPrefetchResumeTheSameOrder() {
        Path file = dir.resolve("sparse-gzip.h5ad");
        resumesExactly(() -> Datasets.h5ad(file).optBlockShuffle(50, 5).optBatchSize(40).optShuffle(8),
                () -> Datasets.h5ad(file).optBlockShuffle(50, 5).optBatchSize(40).optShuffle(8).optThreads(3)
                        .optPrefetch(0), 99);
    }

    @Test
    void aResumedStreamCanBeResumedAgainInTheSameEpoch() {
        Supplier<LoaderBuilder> stream = () -> Datasets.h5ad(dir.resolve("dense-gzip.h5ad")).optBlockShuffle(32, 4)
                .optBatchSize(24).optShuffle(1);
        List<Seen> whole;
        try (Loader loader = stream.get().build()) {
            whole = epoch(loader, 0);
        }
        List<Seen> parts = new ArrayList<>();
        LoaderState state = null;
        for (int part = 0; part < 3; part++) {
            LoaderBuilder builder = stream.get();
            if (state != null) {
                builder.optResumeFrom(state);
            }
            try (Loader loader = builder.build()) {
                var batches = loader.epoch(0).iterator();
                for (int i = 0; i < (part == 2 ? Integer.MAX_VALUE : 9) && batches.hasNext(); i++) {
                    Batch batch = batches.next();
                    parts.add(new Seen(batch.number(), batch.indices().clone(), batch.data().toArray(ValueLayout.JAVA_BYTE)));
                }
                assertFalse(part == 2 && batches.hasNext());
                state = loader.state();
            }
        }
        assertSameBatches(whole, parts, "resumed twice in epoch 0");
        assertArrayEquals(new long[]{1, 0}, new long[]{state.epoch(), state.batchesDone()});
    }
}
