package dev.memfit.shard;

import blue.strategic.parquet.ParquetReader;
import dev.memfit.MemfitException;
import dev.memfit.PausingProgress;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.storage.OutputLock;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two writers into one shard folder, a damaged shard, a re-shard with another size, stray files: the folder either
 * validates with exactly one input's cells or says what is wrong.
 */
class ShardLocksTest {

    private static final int CELLS = 400;
    private static final int GENES = 50;

    @TempDir
    static Path dir;
    /** Two inputs of the same shape (so their shards have the same names), other values and other cell ids. */
    static Path first;
    static Path second;
    static float[] firstCells;
    static float[] secondCells;

    @BeforeAll
    static void inputs() {
        first = dir.resolve("first.h5ad");
        second = dir.resolve("second.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                for seed, prefix, path in ((1, 'a', sys.argv[1]), (2, 'b', sys.argv[2])):
                    rng = np.random.default_rng(seed)
                    x = ((rng.random((%d, %d)) < 0.3) * rng.integers(1, 20, (%d, %d))).astype(np.float32)
                    obs = pd.DataFrame({'depth': x.sum(axis=1).astype(np.float64)},
                                       index=[prefix + str(i) for i in range(x.shape[0])])
                    ad.AnnData(sp.csr_matrix(x), obs=obs,
                               var=pd.DataFrame(index=['g%%d' %% j for j in range(x.shape[1])])).write_h5ad(path)
                print('ok')
                """.formatted(CELLS, GENES, CELLS, GENES), first, second));
        firstCells = dense(first);
        secondCells = dense(second);
    }

    private static float[] dense(Path h5ad) {
        try (H5ad file = H5ad.open(h5ad); Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate((long) CELLS * GENES * Float.BYTES);
            file.readRows(0, CELLS, rows);
            return rows.toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT);
        }
    }

    /** Validates the folder and says whose cells it holds: "first" or "second", failing on a mix. */
    private static String contentOf(Path folder) throws IOException {
        ShardStore.validate(folder);
        float[] cells;
        try (ShardStore store = ShardStore.open(folder); Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate((long) CELLS * GENES * Float.BYTES);
            long[] all = java.util.stream.LongStream.range(0, CELLS).toArray();
            store.readBatch(all, rows);
            cells = rows.toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT);
        }
        List<String> ids = new ArrayList<>();
        try (Stream<Path> files = Files.list(folder)) {
            for (Path parquet : files.filter(f -> f.toString().endsWith(".parquet")).sorted().toList()) {
                try (Stream<String[]> rows = ParquetReader.streamContentToStrings(parquet.toFile())) {
                    rows.forEach(row -> ids.add(row[0].substring(row[0].indexOf('=') + 1)));
                }
            }
        }
        assertEquals(CELLS, ids.size());
        if (java.util.Arrays.equals(cells, firstCells) && ids.stream().allMatch(id -> id.startsWith("a"))) {
            return "first";
        }
        if (java.util.Arrays.equals(cells, secondCells) && ids.stream().allMatch(id -> id.startsWith("b"))) {
            return "second";
        }
        throw new AssertionError(folder + " validates but holds a mix of both inputs: values of the first "
                + java.util.Arrays.equals(cells, firstCells) + ", of the second " + java.util.Arrays.equals(cells, secondCells)
                + ", cell ids " + ids.subList(0, 3) + " ... " + ids.subList(CELLS - 3, CELLS));
    }

    /** A listener whose first step waits for a latch: holds a writer in the middle of its work. */
    private static ProgressListener pausing(CountDownLatch started, CountDownLatch resume) {
        return PausingProgress.of(started, resume);
    }

    @Test
    void aSecondWriterFailsAtOnceNamingTheFirstAndLeavesItsWorkAlone() throws Exception {
        Path out = dir.resolve("held");
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        try (ExecutorService pool = Executors.newSingleThreadExecutor()) {
            Future<ShardWriter.Result> writing = pool.submit(() -> ShardWriter.builder().setInput(first)
                    .optShardSize(100).optProgress(pausing(started, resume)).write(out));
            assertTrue(started.await(60, TimeUnit.SECONDS));
            MemfitException refused = assertThrows(MemfitException.class, () -> ShardWriter.builder().setInput(second)
                    .optShardSize(100).optProgress(ProgressListener.silent()).write(out));
            assertEquals("another memfit writer (pid " + ProcessHandle.current().pid() + ", another thread of this "
                    + "process) is writing " + out.toAbsolutePath() + "; wait for it to finish or stop it, then run again",
                    refused.getMessage());
            resume.countDown();
            assertEquals(4, writing.get().written());
        }
        assertEquals("first", contentOf(out));
        try (Stream<Path> files = Files.list(out)) {
            assertFalse(files.anyMatch(f -> f.getFileName().toString().startsWith(".")), "no lock or temporary file left");
        }
    }

    @Test
    void concurrentWritersNeverLeaveAFolderThatValidatesWithMixedContent() throws Exception {
        Path out = dir.resolve("raced");
        int refusals = 0;
        for (int iteration = 0; iteration < 20; iteration++) {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<ShardWriter.Result>> runs = new ArrayList<>();
            // the same folder every time: each run meets what the previous ones left
            long size = 50 + 25L * (iteration % 3);
            try (ExecutorService pool = Executors.newFixedThreadPool(2)) {
                for (Path input : List.of(first, second)) {
                    runs.add(pool.submit(() -> {
                        go.await();
                        return ShardWriter.builder().setInput(input).optShardSize(size)
                                .optProgress(ProgressListener.silent()).write(out);
                    }));
                }
                go.countDown();
                int succeeded = 0;
                for (Future<ShardWriter.Result> run : runs) {
                    try {
                        run.get();
                        succeeded++;
                    } catch (java.util.concurrent.ExecutionException e) {
                        assertTrue(e.getCause() instanceof MemfitException
                                && e.getCause().getMessage().contains(") is writing " + out.toAbsolutePath()),
                                "a writer fails only on the lock: " + e.getCause());
                        refusals++;
                    }
                }
                assertTrue(succeeded >= 1, "iteration " + iteration + ": the writer holding the lock finishes");
            }
            String content = contentOf(out);   // validates, and fails on a mix
            assertTrue(content.equals("first") || content.equals("second"));
        }
        // how often the two overlapped depends on timing; the folder never mixed either way
        System.out.println("concurrent shard writers: " + refusals + " of 20 iterations refused one writer");
    }

    @Test
    void aTruncatedCellTableIsRepairedAndTheRepairIsReported() throws IOException {
        Path out = dir.resolve("truncated");
        ShardWriter.builder().setInput(first).optShardSize(100).optProgress(ProgressListener.silent()).write(out);
        try (RandomAccessFile file = new RandomAccessFile(out.resolve("shard_000001.parquet").toFile(), "rw")) {
            file.setLength(0);
        }
        MemfitException invalid = assertThrows(MemfitException.class, () -> ShardStore.validate(out));
        assertTrue(invalid.getMessage().contains("shard_000001.parquet"), invalid.getMessage());
        ShardWriter.Result repair = ShardWriter.builder().setInput(first).optShardSize(100)
                .optProgress(ProgressListener.silent()).write(out);
        assertEquals(1, repair.written());
        assertEquals(1, repair.repaired().size());
        assertTrue(repair.repaired().getFirst().startsWith("shard_000001 (shard_000001.parquet: expected ")
                && repair.repaired().getFirst().contains("found 0 bytes"), repair.repaired().getFirst());
        assertEquals("first", contentOf(out));

    }

    @Test
    void aCellTableWithTheWrongRowCountIsRepaired() throws IOException {
        Path out = dir.resolve("rows");
        ShardWriter.builder().setInput(first).optShardSize(150).optProgress(ProgressListener.silent()).write(out);
        // shard 1's table replaced by shard 2's (100 rows for 150 cells), its size and checksum recorded as a
        // careless copy with a regenerated metadata file would: only the row count tells
        Files.copy(out.resolve("shard_000002.parquet"), out.resolve("shard_000001.parquet"),
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Path metadataFile = out.resolve(ShardWriter.METADATA);
        com.fasterxml.jackson.databind.JsonNode metadata = ShardWriter.JSON.readTree(metadataFile.toFile());
        for (com.fasterxml.jackson.databind.JsonNode file : metadata.path("shards").get(1).path("files")) {
            if (file.path("role").asText().equals("metadata")) {
                Path table = out.resolve("shard_000001.parquet");
                ((com.fasterxml.jackson.databind.node.ObjectNode) file).put("bytes", Files.size(table))
                        .put("crc32c", ShardWriter.crc32c(table));
            }
        }
        Files.writeString(metadataFile, ShardWriter.JSON.writeValueAsString(metadata));
        MemfitException invalid = assertThrows(MemfitException.class, () -> ShardStore.validate(out));
        assertEquals(out.resolve("shard_000001.parquet") + ": expected 150 rows of cell metadata, found 100 rows",
                invalid.getMessage());
        ShardWriter.Result repair = ShardWriter.builder().setInput(first).optShardSize(150)
                .optProgress(ProgressListener.silent()).write(out);
        assertEquals(List.of("shard_000001 (shard_000001.parquet: expected 150 rows of cell metadata, found 100 rows)"),
                repair.repaired());
        assertEquals(1, repair.written());
        assertEquals("first", contentOf(out));
    }

    @Test
    void reshardingRemovesStaleShardsAndValidateNamesStrayFiles() throws IOException {
        Path out = dir.resolve("resharded");
        ShardWriter.builder().setInput(first).optShardSize(40).optProgress(ProgressListener.silent()).write(out);
        assertTrue(Files.exists(out.resolve("shard_000009.parquet")));
        ShardWriter.Result bigger = ShardWriter.builder().setInput(second).optShardSize(100)
                .optProgress(ProgressListener.silent()).write(out);
        assertEquals(4, bigger.shards());
        assertEquals(24, bigger.removed().size(), bigger.removed().toString());   // shards 4..9: 3 arrays + a table each
        assertTrue(bigger.removed().contains("shard_000009.indptr.npy"), bigger.removed().toString());
        assertFalse(Files.exists(out.resolve("shard_000004.parquet")));
        assertEquals("second", contentOf(out));

        // dense after sparse: the CSR files of the same shards go too
        ShardWriter.Result dense = ShardWriter.builder().setInput(second).optShardSize(100).optLayout(ShardLayout.DENSE)
                .optProgress(ProgressListener.silent()).write(out);
        assertEquals(12, dense.removed().size(), dense.removed().toString());
        assertEquals("second", contentOf(out));

        // files validate does not expect: a stray array, an old shard, a dead run's temporary file
        Files.writeString(out.resolve("notes.npy"), "not a shard");
        Files.writeString(out.resolve("shard_000007.npy"), "stale");
        Files.writeString(out.resolve(".shard_000001.parquet.partial"), "left by an old version");
        MemfitException stray = assertThrows(MemfitException.class, () -> ShardStore.validate(out));
        assertTrue(stray.getMessage().contains("found 3 more: .shard_000001.parquet.partial, notes.npy, shard_000007.npy"),
                stray.getMessage());
        ShardWriter.Result cleaned = ShardWriter.builder().setInput(second).optShardSize(100).optLayout(ShardLayout.DENSE)
                .optProgress(ProgressListener.silent()).write(out);
        assertEquals(0, cleaned.written());
        assertEquals(List.of("shard_000007.npy", ".shard_000001.parquet.partial"), cleaned.removed());
        assertEquals(List.of("notes.npy"), cleaned.foreign(), "a file that is not memfit's is left to its owner");
        MemfitException notes = assertThrows(MemfitException.class, () -> ShardStore.validate(out));
        assertTrue(notes.getMessage().contains("found 1 more: notes.npy"), notes.getMessage());
        Files.delete(out.resolve("notes.npy"));
        assertEquals("second", contentOf(out));
    }

    @Test
    void temporaryFilesOfDeadRunsAreRemovedAndALiveRunsKept() throws Exception {
        Path out = dir.resolve("temporaries");
        ShardWriter.builder().setInput(first).optShardSize(100).optProgress(ProgressListener.silent()).write(out);
        Process done = new ProcessBuilder("true").start();
        done.waitFor();
        Process sleeper = new ProcessBuilder("sleep", "600").start();
        try {
            String dead = ".shard_000002.data.npy." + done.pid() + "-0badcafe-1.partial";
            String live = ".shard_000002.data.npy." + sleeper.pid() + "-0badcafe-1.partial";
            Files.writeString(out.resolve(dead), "dead");
            Files.writeString(out.resolve(live), "live");
            ShardWriter.Result result = ShardWriter.builder().setInput(first).optShardSize(100)
                    .optProgress(ProgressListener.silent()).write(out);
            assertFalse(Files.exists(out.resolve(dead)));
            assertTrue(Files.exists(out.resolve(live)), "a running process's file is not touched");
            assertEquals(List.of(live), result.foreign());
        } finally {
            sleeper.destroyForcibly().waitFor();
        }
        // once its process is gone, the next run removes it
        ShardWriter.builder().setInput(first).optShardSize(100).optProgress(ProgressListener.silent()).write(out);
        assertEquals("first", contentOf(out));
    }

    @Test
    void aFolderLockedByTheCallerNests() throws Exception {
        Path out = dir.resolve("nested");
        try (OutputLock lock = OutputLock.acquireFolder(out)) {
            // the shard command locks the folder before it reads the input; the writer's own lock nests in it
            ShardWriter.builder().setInput(first).optShardSize(200).optProgress(ProgressListener.silent()).write(out);
            assertTrue(Files.exists(lock.lockFile()));
        }
        assertEquals("first", contentOf(out));
    }
}
