package dev.memfit.data;

import dev.memfit.ChildJvm;
import dev.memfit.PythonPeer;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Loaders killed with SIGKILL and resumed from their last saved state, as a trainer's checkpoints would be: a child
 * process ({@link LoaderKillChild}) logs every batch (indices and a CRC32 of its bytes) and saves the loader's state
 * after it; it is killed at seeded random batches (inside an epoch with its last batch logged but its state not
 * saved, at the end of an epoch, twice inside the next epoch, once at an unplanned moment) and restarted each time.
 * The batches logged, less those handed out after the last saved state (redone after the restart, as a trainer redoes
 * a step it did not checkpoint), must be the uninterrupted run's, byte for byte. Inputs written by numpy and anndata
 * with their defaults.
 */
class LoaderKillResumeTest {

    @TempDir
    static Path dir;

    private static final int ROWS = 1_003;
    private static final int CELLS = 997;
    private static final long EPOCHS = 3;
    private static final Duration PATIENCE = Duration.ofSeconds(120);

    @BeforeAll
    static void write() {
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                d = sys.argv[1]
                rng = np.random.default_rng(5)
                np.save(d + '/x.npy', rng.random((%d, 6), dtype=np.float32))
                x = ((rng.random((%d, 30)) < 0.2) * rng.integers(1, 9, (%d, 30))).astype(np.float32)
                obs = pd.DataFrame(index=['c%%d' %% i for i in range(%d)])
                var = pd.DataFrame(index=['g%%d' %% j for j in range(30)])
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=var).write_h5ad(d + '/atlas.h5ad')
                print('ok')
                """.formatted(ROWS, CELLS, CELLS, CELLS), dir));
        ShardWriter.builder().setInput(dir.resolve("atlas.h5ad")).optShardSize(200)
                .optProgress(dev.memfit.ProgressListener.silent()).write(dir.resolve("shards"));
    }

    @Test
    void aShuffledNpyKilledAndResumedYieldsTheUninterruptedBatches() throws Exception {
        killedAndResumedMatchesUninterrupted("npy", 1);
    }

    @Test
    void sparseShardsKilledAndResumedYieldTheUninterruptedBatches() throws Exception {
        killedAndResumedMatchesUninterrupted("shards", 2);
    }

    @Test
    void anH5adStreamKilledInsideEpochsAndResumedYieldsTheUninterruptedBatches() throws Exception {
        killedAndResumedMatchesUninterrupted("h5ad", 3);
    }

    /** One child run: where it stopped (planned pause, or a kill after some lines) and the log it wrote. */
    private record Kill(long pauseAt, String phase, int linesThenKill) {
    }

    private static void killedAndResumedMatchesUninterrupted(String kind, long seed) throws Exception {
        Path work = Files.createDirectories(dir.resolve(kind));
        long perEpoch;
        try (Loader loader = LoaderKillChild.loader(kind, dir, null)) {
            perEpoch = loader.batchesPerEpoch();
        }
        assertTrue(perEpoch >= 12, "enough batches per epoch for the kills planned: " + perEpoch);
        // uninterrupted: the same main, in this JVM
        Path whole = work.resolve("whole.log");
        LoaderKillChild.main(args(kind, whole, work.resolve("whole.state"), -1, "none", 0));
        List<String> expected = completeLines(whole).subList(1, (int) (1 + EPOCHS * perEpoch));
        assertEquals(EPOCHS * perEpoch, completeLines(whole).size() - 1);

        Random random = new Random(seed);
        long inFirst = 1 + random.nextInt((int) perEpoch - 3);
        long inSecond = perEpoch + 1 + random.nextInt((int) perEpoch / 2 - 1);
        List<Kill> kills = List.of(
                new Kill(inFirst, "line", 0),               // logged, state not saved: redone after the restart
                new Kill(perEpoch - 1, "state", 0),         // the last batch of epoch 0: saved as the start of epoch 1
                new Kill(inSecond, "state", 0),             // inside epoch 1
                new Kill(-1, "none", 2 + random.nextInt(3))); // inside epoch 1 again, wherever the kill lands
        Path state = work.resolve("state.json");
        List<Path> logs = new ArrayList<>();
        for (int run = 0; run <= kills.size(); run++) {
            Path log = work.resolve("run" + run + ".log");
            logs.add(log);
            Path output = work.resolve("run" + run + ".out");
            if (run == kills.size()) {
                try (ChildJvm child = ChildJvm.start(output, LoaderKillChild.class, args(kind, log, state, -1, "none", 0))) {
                    child.awaitSuccess(PATIENCE);
                }
                break;
            }
            Kill kill = kills.get(run);
            try (ChildJvm child = ChildJvm.start(output, LoaderKillChild.class,
                    args(kind, log, state, kill.pauseAt(), kill.phase(), kill.linesThenKill() > 0 ? 30 : 0))) {
                if (kill.linesThenKill() > 0) {
                    child.waitUntil(PATIENCE, kill.linesThenKill() + " batches", ChildJvm.lines(log, 1 + kill.linesThenKill()));
                } else {
                    child.waitUntil(PATIENCE, "the pause at batch " + kill.pauseAt(),
                            ChildJvm.lineContaining(output, "paused at batch " + kill.pauseAt()));
                }
                child.kill();
            }
        }

        List<String> merged = new ArrayList<>();
        List<long[]> starts = new ArrayList<>();
        int redone = 0;
        for (Path log : logs) {
            List<String> lines = completeLines(log);
            String[] start = lines.getFirst().split(" ");
            long[] at = {Long.parseLong(start[1]), Long.parseLong(start[2])};
            starts.add(at);
            long resumeAt = at[0] * perEpoch + at[1];
            // batches handed out after the last saved state: the restart hands them out again
            while (merged.size() > resumeAt) {
                merged.removeLast();
                redone++;
            }
            assertEquals(resumeAt, merged.size(), "the saved state is at the batch after the last one logged, or one before");
            merged.addAll(lines.subList(1, lines.size()));
        }
        assertEquals(expected.size(), merged.size(), "batches after the kills and restarts");
        for (int i = 0; i < expected.size(); i++) {
            assertEquals(expected.get(i), merged.get(i), "batch " + i + " (counted over epochs) of " + kind);
        }
        assertTrue(redone >= 1, "the kill between a batch and its checkpoint redoes that batch");
        assertEquals(List.of(0L, inFirst), Arrays.stream(starts.get(1)).boxed().toList(), "resumed at the batch not saved");
        assertEquals(List.of(1L, 0L), Arrays.stream(starts.get(2)).boxed().toList(), "resumed at the epoch boundary");
        assertEquals(List.of(1L, inSecond + 1 - perEpoch), Arrays.stream(starts.get(3)).boxed().toList(), "inside epoch 1");
        assertTrue(starts.get(4)[0] == 1 && starts.get(4)[1] > starts.get(3)[1], "resumed a second time inside epoch 1: "
                + Arrays.toString(starts.get(4)));
        LoaderState last = LoaderState.fromJson(Files.readString(state));
        assertEquals(EPOCHS, last.epoch(), "the finished run is saved as the start of the next epoch");
        assertEquals(0, last.batchesDone());
    }

    private static String[] args(String kind, Path log, Path state, long pauseAt, String phase, long slowMillis) {
        return new String[]{kind, dir.toString(), log.toString(), state.toString(), Long.toString(EPOCHS),
                Long.toString(pauseAt), phase, Long.toString(slowMillis)};
    }

    /** The newline-ended lines of a log (a kill can cut nothing but a whole line, but be strict). */
    private static List<String> completeLines(Path log) throws IOException {
        String text = Files.readString(log, StandardCharsets.UTF_8);
        int end = text.lastIndexOf('\n');
        return end < 0 ? List.of() : List.of(text.substring(0, end).split("\n"));
    }
}
