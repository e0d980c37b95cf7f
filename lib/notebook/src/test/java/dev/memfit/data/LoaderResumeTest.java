package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.sample.DistributedShardSampler;
import dev.memfit.sample.WeightedSampler;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Resuming a loader from its saved state: the batches after the resume point are exactly those of an uninterrupted
 * run (indices and bytes), whatever the source and sampler, at any batch, twice in one epoch, at an epoch boundary,
 * after leaving an epoch early; and what cannot be honoured is refused loudly. Inputs written by numpy and anndata.
 */
class LoaderResumeTest {

    @TempDir
    static Path dir;

    private static final int ROWS = 1_003;
    private static final int CELLS = 997;

    @BeforeAll
    static void write() {
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                d = sys.argv[1]
                rng = np.random.default_rng(11)
                np.save(d + '/x.npy', rng.random((%d, 6), dtype=np.float32))
                np.save(d + '/x-other.npy', rng.random((%d, 6), dtype=np.float32))
                x = ((rng.random((%d, 30)) < 0.2) * rng.integers(1, 9, (%d, 30))).astype(np.float32)
                obs = pd.DataFrame(index=['c%%d' %% i for i in range(%d)])
                var = pd.DataFrame(index=['g%%d' %% j for j in range(30)])
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=var).write_h5ad(d + '/atlas.h5ad')
                print('ok')
                """.formatted(ROWS, ROWS + 1, CELLS, CELLS, CELLS), dir));
        ShardWriter.builder().setInput(dir.resolve("atlas.h5ad")).optShardSize(200)
                .optProgress(dev.memfit.ProgressListener.silent()).write(dir.resolve("shards"));
    }

    /** One batch as seen by a consumer: its number, indices and a copy of its bytes. */
    private record Seen(long epoch, long number, long[] indices, byte[] bytes) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Seen s && epoch == s.epoch && number == s.number && Arrays.equals(indices, s.indices)
                    && Arrays.equals(bytes, s.bytes);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(number);
        }

        @Override
        public String toString() {
            return "batch " + number + " of epoch " + epoch + " " + Arrays.toString(Arrays.copyOf(indices, Math.min(4, indices.length)));
        }
    }

    private static Seen seen(Batch batch) {
        return new Seen(batch.epoch(), batch.number(), batch.indices().clone(), batch.data().toArray(ValueLayout.JAVA_BYTE));
    }

    /** Every batch of epochs [from, to) of a fresh loader. */
    private static List<Seen> run(Supplier<LoaderBuilder> builder, long from, long to) {
        List<Seen> all = new ArrayList<>();
        try (Loader loader = builder.get().build()) {
            for (long e = from; e < to; e++) {
                for (Batch batch : loader.epoch(e)) {
                    all.add(seen(batch));
                }
            }
        }
        return all;
    }

    /**
     * Takes {@code stopAfter} batches (counted over epochs from 0), saves the state as JSON as a checkpoint would,
     * then a new loader resumes from it and runs to the end of epoch {@code epochs - 1}: returns both parts.
     */
    private static List<Seen> interruptedAndResumed(Supplier<LoaderBuilder> builder, int epochs, int stopAfter) {
        List<Seen> all = new ArrayList<>();
        String saved;
        try (Loader loader = builder.get().build()) {
            outer:
            for (long e = 0; e < epochs; e++) {
                for (Batch batch : loader.epoch(e)) {
                    all.add(seen(batch));
                    if (all.size() == stopAfter) {
                        break outer;
                    }
                }
            }
            saved = loader.state().toJson();
        }
        LoaderState state = LoaderState.fromJson(saved);
        try (Loader loader = builder.get().optResumeFrom(state).build()) {
            for (long e = state.epoch(); e < epochs; e++) {
                for (Batch batch : loader.epoch(e)) {
                    all.add(seen(batch));
                }
            }
        }
        return all;
    }

    private static void resumesExactly(Supplier<LoaderBuilder> builder) {
        List<Seen> uninterrupted = run(builder, 0, 2);
        long perEpoch;
        try (Loader loader = builder.get().build()) {
            perEpoch = loader.batchesPerEpoch();
        }
        // inside the first epoch, at its last batch (the boundary), and inside the second
        for (int stop : new int[]{1, 7, (int) perEpoch, (int) perEpoch + 3}) {
            assertEquals(uninterrupted, interruptedAndResumed(builder, 2, stop), "resumed after " + stop + " batches");
        }
    }

    @Test
    void shuffledNpyResumesAtAnyBatchWithTheSameBatches() {
        resumesExactly(() -> Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(64).optShuffle(7).optThreads(2));
    }

    @Test
    void sparseShardsResumeWithTheSameBatches() {
        resumesExactly(() -> Datasets.shards(dir.resolve("shards")).optBatchSize(50).optShuffle(3).optThreads(1));
    }

    @Test
    void weightedAndDistributedSamplersResumeWithTheSameBatches() {
        int[] labels = new int[ROWS];
        for (int i = 0; i < ROWS; i++) {
            labels[i] = i % 10 == 0 ? 1 : 0;
        }
        resumesExactly(() -> Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(32).optSampler(new WeightedSampler(labels, 5, 2)));
        long[] shardSizes = {300, 300, 300, 103};
        resumesExactly(() -> Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(16).optSampler(DistributedShardSampler.builder()
                .setShardSizes(shardSizes).optRank(1).optWorldSize(3).optSeed(9).build()));
    }

    @Test
    void particlesResumeWhateverTheThreadsStorageOrEagerness() {
        var written = dev.memfit.synthetic.SyntheticParticles.builder().setParticles(90).setSize(8).optPerStack(40).optSeed(2)
                .optProgress(dev.memfit.ProgressListener.silent()).write(dir.resolve("particles"));
        Path star = written.star();
        List<Seen> uninterrupted = run(() -> Datasets.particles(star).lazy(2).optBatchSize(16).optShuffle(5), 0, 1);
        LoaderState saved;
        try (Loader loader = Datasets.particles(star).lazy(2).optBatchSize(16).optShuffle(5).build()) {
            var batches = loader.epoch(0).iterator();
            batches.next();
            batches.next();
            saved = loader.state();
        }
        List<Supplier<LoaderBuilder>> others = List.of(
                () -> Datasets.particles(star).lazy(4).optBatchSize(16).optShuffle(5),
                () -> Datasets.particles(star).optStorage(() -> new dev.memfit.ObservedStorage(dev.memfit.io.storage.Storage.local(),
                        "watched", (file, position, into) -> { })).lazy(1).optBatchSize(16).optShuffle(5),
                () -> Datasets.particles(star).eager().optBatchSize(16).optShuffle(5));
        for (Supplier<LoaderBuilder> other : others) {
            List<Seen> rest = new ArrayList<>();
            try (Loader loader = other.get().optResumeFrom(saved).build()) {
                for (Batch batch : loader.epoch(0)) {
                    rest.add(seen(batch));
                }
            }
            assertEquals(uninterrupted.subList(2, uninterrupted.size()), rest, "the same images, read another way");
        }
    }

    @Test
    void resumingTwiceInOneEpochKeepsThePosition() {
        Supplier<LoaderBuilder> builder = () -> Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(64).optShuffle(7);
        List<Seen> uninterrupted = run(builder, 0, 1);
        List<Seen> all = new ArrayList<>();
        LoaderState state = null;
        for (int part = 0; part < 3; part++) {
            LoaderBuilder b = builder.get();
            if (state != null) {
                b.optResumeFrom(state);
            }
            try (Loader loader = b.build()) {
                var batches = loader.epoch(0).iterator();
                for (int i = 0; i < 5 && batches.hasNext(); i++) {
                    all.add(seen(batches.next()));
                }
                if (part == 2) {
                    batches.forEachRemaining(batch -> all.add(seen(batch)));
                }
                state = loader.state();
            }
        }
        assertEquals(uninterrupted, all);
        assertEquals(1, state.epoch(), "the finished epoch is saved as the start of the next");
        assertEquals(0, state.batchesDone());
    }

    @Test
    void leavingAnEpochEarlySavesTheBatchesHandedOut() {
        try (Loader loader = Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(64).optShuffle(7).optPrefetch(4).build()) {
            assertEquals(0, loader.state().batchesDone());
            var batches = loader.epoch(0).iterator();
            batches.next();
            batches.next();
            batches.next();
            LoaderState state = loader.state();
            assertEquals(0, state.epoch());
            assertEquals(3, state.batchesDone(), "read-ahead batches are not counted as done");
        }
    }

    @Test
    void aStateLoadedAfterIteratingIsRefused() {
        try (Loader loader = Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(64).optShuffle(7).build()) {
            LoaderState state = loader.state();
            loader.epoch(0).iterator().next();
            MemfitException e = assertThrows(MemfitException.class, () -> loader.resumeFrom(state));
            assertTrue(e.getMessage().contains("before the first epoch"), e.getMessage());
        }
    }

    @Test
    void otherDataOrSettingsAreRefusedNamingTheDifference() {
        LoaderState state;
        try (Loader loader = Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(64).optShuffle(7).build()) {
            loader.epoch(0).iterator().next();
            state = loader.state();
        }
        MemfitException batch = assertThrows(MemfitException.class,
                () -> Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(128).optShuffle(7).optResumeFrom(state).build());
        assertTrue(batch.getMessage().contains("batch size: 64 saved, 128 now"), batch.getMessage());
        MemfitException seed = assertThrows(MemfitException.class,
                () -> Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(64).optShuffle(8).optResumeFrom(state).build());
        assertTrue(seed.getMessage().contains("sampler: ShuffledSampler[1003, seed 7] saved"), seed.getMessage());
        MemfitException data = assertThrows(MemfitException.class,
                () -> Datasets.npy(dir.resolve("x-other.npy")).mapped().optBatchSize(64).optShuffle(7).optResumeFrom(state).build());
        assertTrue(data.getMessage().contains("data: x.npy"), data.getMessage());
        // the same file loaded instead of mapped is the same data: allowed
        try (Loader loaded = Datasets.npy(dir.resolve("x.npy")).inMemory().optBatchSize(64).optShuffle(7).optResumeFrom(state).build()) {
            assertEquals(1, loaded.epoch(0).iterator().next().number());
        }
        try (Loader skipping = Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(64).optShuffle(7).optResumeFrom(state).build()) {
            MemfitException wrongEpoch = assertThrows(MemfitException.class, () -> skipping.epoch(1).iterator());
            assertTrue(wrongEpoch.getMessage().contains("start with epoch 0"), wrongEpoch.getMessage());
        }
    }

    @Test
    void aStreamResumesAtEpochBoundariesAndInsideAnEpoch() {
        Supplier<LoaderBuilder> stream = () -> Datasets.h5ad(dir.resolve("atlas.h5ad")).optBatchSize(50).optBlockShuffle(100, 8)
                .optShuffle(4);
        List<Seen> firstEpoch = new ArrayList<>();
        List<Seen> secondEpoch = new ArrayList<>();
        LoaderState boundary;
        LoaderState middle;
        try (Loader loader = stream.get().build()) {
            var batches = loader.epoch(0).iterator();
            firstEpoch.add(seen(batches.next()));
            middle = loader.state();
            batches.forEachRemaining(b -> firstEpoch.add(seen(b)));
            boundary = loader.state();
            for (Batch batch : loader.epoch(1)) {
                secondEpoch.add(seen(batch));
            }
        }
        assertEquals(1, boundary.epoch());
        assertEquals(0, boundary.batchesDone());
        List<Seen> resumed = new ArrayList<>();
        try (Loader loader = stream.get().optResumeFrom(boundary).build()) {
            for (Batch batch : loader.epoch(1)) {
                resumed.add(seen(batch));
            }
        }
        assertEquals(secondEpoch, resumed, "a stream resumed at an epoch boundary yields the same epoch");
        assertEquals(1, middle.batchesDone());
        List<Seen> rest = new ArrayList<>();
        try (Loader loader = stream.get().optResumeFrom(middle).build()) {
            for (Batch batch : loader.epoch(0)) {
                rest.add(seen(batch));
            }
        }
        assertEquals(firstEpoch.subList(1, firstEpoch.size()), rest, "a stream resumed inside an epoch yields the rest of it");
    }

    @Test
    void theStateSurvivesCloseAndAFinishedEpochResumesEitherWay() {
        Supplier<LoaderBuilder> builder = () -> Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(64).optShuffle(7);
        Loader loader = builder.get().build();
        var batches = loader.epoch(3).iterator();
        batches.next();
        batches.next();
        loader.close();
        loader.close();     // twice: nothing more happens
        LoaderState closed = loader.state();
        assertEquals(3, closed.epoch(), "the position at closing, for a checkpoint written after close");
        assertEquals(2, closed.batchesDone());

        long batchesPerEpoch;
        try (Loader probe = builder.get().build()) {
            batchesPerEpoch = probe.batchesPerEpoch();
        }
        // a hand-made state at the end of epoch 2: epoch 2 is empty, or epoch 3 starts from its beginning
        LoaderState finished = new LoaderState(closed.source(), closed.samples(), closed.sampler(), closed.batchSize(),
                closed.dropLast(), 2, batchesPerEpoch);
        try (Loader resumed = builder.get().optResumeFrom(finished).build()) {
            assertEquals(List.of(3L, 0L), List.of(resumed.state().epoch(), resumed.state().batchesDone()),
                    "before iterating, the state names the next epoch's start, as state() saves a finished epoch");
            assertTrue(!resumed.epoch(2).iterator().hasNext(), "nothing left of epoch 2");
            assertEquals(0, resumed.epoch(3).iterator().next().number());
        }
        try (Loader resumed = builder.get().optResumeFrom(finished).build()) {
            assertEquals(List.of(0L, 1L), java.util.stream.StreamSupport.stream(resumed.epoch(3).spliterator(), false)
                    .limit(2).map(Batch::number).toList());
        }
    }

    private static Supplier<LoaderBuilder> distributed(int rank, int worldSize) {
        long[] shardSizes = {300, 300, 300, 103};
        return () -> Datasets.npy(dir.resolve("x.npy")).mapped().optBatchSize(16).optSampler(DistributedShardSampler.builder()
                .setShardSizes(shardSizes).optRank(rank).optWorldSize(worldSize).optSeed(9).build());
    }

    @Test
    void anotherWorldSizeIsAcceptedAtAnEpochBoundaryAndPartitionsTheNextEpochForTheNewWorld() {
        LoaderState boundary;
        try (Loader loader = distributed(1, 4).get().build()) {
            for (Batch batch : loader.epoch(0)) {
                batch.number();
            }
            boundary = loader.state();
        }
        assertEquals(List.of(1L, 0L, 1L, 4L), List.of(boundary.epoch(), boundary.batchesDone(), (long) boundary.rank(),
                (long) boundary.worldSize()));
        // the job restarts with 2 ranks: rank 0 resumes from rank 1's saved state of the 4-rank job
        LoaderState restored = LoaderState.fromJson(boundary.toJson());
        List<Seen> fresh = run(distributed(0, 2), 1, 2);
        List<Seen> resumed = new ArrayList<>();
        try (Loader loader = distributed(0, 2).get().optResumeFrom(restored).build()) {
            for (Batch batch : loader.epoch(1)) {
                resumed.add(seen(batch));
            }
            assertEquals(2, loader.state().worldSize(), "the state now records the new world");
            assertEquals(0, loader.state().rank());
        }
        assertEquals(fresh, resumed, "epoch 1 as rank 0 of 2 reads it");
        // the same state with the saved world size resumes as before
        try (Loader loader = distributed(1, 4).get().optResumeFrom(restored).build()) {
            assertEquals(run(distributed(1, 4), 1, 2).getFirst(), seen(loader.epoch(1).iterator().next()));
        }
    }

    @Test
    void anotherWorldSizeOrRankIsRefusedInsideAnEpochNamingBoth() {
        LoaderState middle;
        try (Loader loader = distributed(1, 4).get().build()) {
            var batches = loader.epoch(0).iterator();
            batches.next();
            batches.next();
            middle = loader.state();
        }
        MemfitException world = assertThrows(MemfitException.class, () -> distributed(0, 2).get().optResumeFrom(middle).build());
        assertTrue(world.getMessage().contains("world size: 4 saved, 2 now") && world.getMessage().contains("rank: 1 saved, 0 now")
                && world.getMessage().contains("epoch boundary"), world.getMessage());
        MemfitException rank = assertThrows(MemfitException.class, () -> distributed(2, 4).get().optResumeFrom(middle).build());
        assertTrue(rank.getMessage().contains("rank: 1 saved, 2 now") && !rank.getMessage().contains("world size:"),
                rank.getMessage());
        // the saved partition resumes inside the epoch
        try (Loader loader = distributed(1, 4).get().optResumeFrom(middle).build()) {
            assertEquals(2, loader.epoch(0).iterator().next().number());
        }
    }

    @Test
    void stateRoundTripsThroughJsonAndRejectsNonsense() {
        LoaderState state = new LoaderState("x.npy (header)", 10, "ShuffledSampler[10, seed 1]", 4, false, 3, 2);
        assertEquals(state, LoaderState.fromJson(state.toJson()));
        LoaderState ranked = new LoaderState("x.npy (header)", 10, "DistributedShardSampler[...]", 4, true, 3, 2, 3, 8);
        assertEquals(ranked, LoaderState.fromJson(ranked.toJson()));
        // written before rank and world size were saved: rank 0 of 1
        LoaderState older = LoaderState.fromJson("""
                {"source":"x.npy (header)","samples":10,"sampler":"ShuffledSampler[10, seed 1]","batchSize":4,
                 "dropLast":false,"epoch":3,"batchesDone":2}""");
        assertEquals(state, older);
        assertEquals(List.of(0, 1), List.of(older.rank(), older.worldSize()));
        assertThrows(MemfitException.class, () -> new LoaderState("s", 10, "t", 4, false, 0, 0, 2, 2));
        assertThrows(MemfitException.class, () -> LoaderState.fromJson("{\"epoch\": 1}"));
        assertThrows(MemfitException.class, () -> new LoaderState("s", 10, "t", 0, false, 0, 0));
    }
}
