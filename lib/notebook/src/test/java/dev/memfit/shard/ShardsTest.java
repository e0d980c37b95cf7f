package dev.memfit.shard;

import blue.strategic.parquet.ParquetReader;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.InvalidFileException;
import dev.memfit.io.npy.Npy;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ShardsTest {

    @TempDir
    static Path dir;
    static Path input;

    @BeforeAll
    static void atlas() {
        input = dir.resolve("atlas.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(1)
                x = ((rng.random((120, 30)) < 0.2) * rng.integers(1, 9, (120, 30))).astype(np.float32)
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T'], 120)),
                                    'depth': x.sum(axis=1).astype(np.float64),
                                    'is_doublet': rng.random(120) < 0.3}, index=['c%d' % i for i in range(120)])
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=pd.DataFrame(index=['g%d' % j for j in range(30)])).write_h5ad(sys.argv[1])
                print('ok')
                """, input));
    }

    private static void assertStoreMatchesInput(Path folder, GeneVocabulary vocabulary) {
        try (ShardStore store = ShardStore.open(folder); H5ad h5ad = H5ad.open(input); Arena arena = Arena.ofConfined()) {
            assertEquals(120, store.size());
            int[] positions = vocabulary.positionsOf(h5ad.index("var"));
            MemorySegment rows = arena.allocate(120L * 30 * 4);
            MemorySegment expected = arena.allocate(120L * vocabulary.genes().size() * 4);
            h5ad.readRows(0, 120, rows);
            vocabulary.project(rows, 120, positions, expected);
            MemorySegment cell = arena.allocate(vocabulary.genes().size() * 4L);
            for (long i : new long[]{0, 49, 50, 99, 100, 119}) {
                store.read(i, cell);
                assertEquals(-1, cell.mismatch(expected.asSlice(i * cell.byteSize(), cell.byteSize())), "cell " + i);
            }
        }
    }

    @Test
    void shardsHoldTheRowsAndTheCellMetadata() throws IOException {
        Path out = dir.resolve("shards");
        ShardWriter.Result result = ShardWriter.builder().setInput(input).optShardSize(50).write(out);
        assertEquals(3, result.shards());
        assertEquals(3, result.written());
        ShardStore.validate(out);
        try (H5ad h5ad = H5ad.open(input)) {
            assertStoreMatchesInput(out, GeneVocabulary.fromVar(h5ad));
            String[] types = (String[]) h5ad.column("obs", "cell_type");
            List<String[]> table;
            try (var rows = ParquetReader.streamContentToStrings(out.resolve("shard_000001.parquet").toFile())) {
                table = rows.toList();
            }
            assertEquals(50, table.size());
            assertEquals("cell_id=c57", table.get(7)[0]);
            assertEquals("cell_type=" + types[57], table.get(7)[1]);
            boolean[] doublets = (boolean[]) h5ad.column("obs", "is_doublet");
            assertEquals("is_doublet=" + doublets[57], table.get(7)[3], "anndata's bool column stays boolean");
        }
        try (ShardStore store = ShardStore.open(out)) {
            assertEquals(List.of(50L, 50L, 20L), java.util.Arrays.stream(store.shardSizes()).boxed().toList());
        }
        assertEquals(0, ShardWriter.builder().setInput(input).optShardSize(50)
                .write(out).written(), "a complete folder is left as it is");
    }

    @Test
    void vocabularyFixesTheColumns() {
        Path out = dir.resolve("top");
        GeneVocabulary top;
        try (H5ad h5ad = H5ad.open(input)) {
            top = GeneVocabulary.topByTotalCounts(h5ad, 7);
        }
        ShardWriter.builder().setInput(input).optShardSize(64).optVocabulary(top).optLayout(ShardLayout.DENSE).write(out);
        assertStoreMatchesInput(out, top);
        assertEquals(List.of(64L, 7L), List.of(Npy.readHeader(out.resolve("shard_000000.npy")).shape()[0],
                Npy.readHeader(out.resolve("shard_000000.npy")).shape()[1]));
    }

    @Test
    void anInterruptedConversionResumes() throws IOException {
        Path out = dir.resolve("resume");
        ShardWriter.builder().setInput(input).optShardSize(40).optLayout(ShardLayout.DENSE).write(out);
        // As if the run had stopped after the first shard: metadata lists one shard, the others never got renamed.
        ObjectNode metadata = (ObjectNode) ShardWriter.JSON.readTree(out.resolve(ShardWriter.METADATA).toFile());
        ((com.fasterxml.jackson.databind.node.ArrayNode) metadata.get("shards")).remove(2);
        ((com.fasterxml.jackson.databind.node.ArrayNode) metadata.get("shards")).remove(1);
        metadata.put("complete", false);
        Files.writeString(out.resolve(ShardWriter.METADATA), ShardWriter.JSON.writeValueAsString(metadata));
        Files.delete(out.resolve("shard_000001.npy"));
        Files.delete(out.resolve("shard_000002.npy"));
        InvalidFileException incomplete = assertThrows(InvalidFileException.class, () -> ShardStore.open(out));
        assertTrue(incomplete.getMessage().contains("run memfit shard again to resume"), incomplete.getMessage());
        assertEquals(2, ShardWriter.builder().setInput(input).optShardSize(40).optLayout(ShardLayout.DENSE).write(out).written());
        ShardStore.validate(out);
    }

    @Test
    void aRewrittenSourceIsConvertedAgainNotResumed() throws IOException {
        Path source = dir.resolve("rewritten.h5ad");
        Path out = dir.resolve("rewritten-shards");
        dev.memfit.synthetic.SyntheticAtlas.builder().setCells(90).setGenes(12).optSeed(1).write(source);
        ShardWriter.builder().setInput(source).optShardSize(40).write(out);
        // same name, same shape, new contents (another seed), as a notebook re-run with other parameters does
        dev.memfit.synthetic.SyntheticAtlas.builder().setCells(90).setGenes(12).optSeed(2).write(source);
        Files.setLastModifiedTime(source, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 5_000));
        assertEquals(3, ShardWriter.builder().setInput(source).optShardSize(40).write(out).written(), "all shards rewritten");
        try (ShardStore store = ShardStore.open(out); H5ad h5ad = H5ad.open(source); Arena arena = Arena.ofConfined()) {
            MemorySegment expected = arena.allocate(90L * 12 * 4);
            MemorySegment found = arena.allocate(90L * 12 * 4);
            h5ad.readRows(0, 90, expected);
            for (long i = 0; i < 90; i++) {
                store.read(i, found.asSlice(i * 48, 48));
            }
            assertEquals(-1, found.mismatch(expected), "the shards hold the new contents");
        }
    }

    @Test
    void validationNamesWhatIsWrong() throws IOException {
        Path out = dir.resolve("broken");
        ShardWriter.builder().setInput(input).optShardSize(50).optLayout(ShardLayout.DENSE).write(out);
        try (RandomAccessFile file = new RandomAccessFile(out.resolve("shard_000001.npy").toFile(), "rw")) {
            file.seek(file.length() - 10);
            file.write(0x7f);
        }
        InvalidFileException corrupt = assertThrows(InvalidFileException.class, () -> ShardStore.validate(out));
        assertTrue(corrupt.getMessage().contains("shard_000001.npy") && corrupt.getMessage().contains("(corrupt or replaced)"),
                corrupt.getMessage());
        Npy.write(out.resolve("shard_000001.npy"), new float[][]{{1, 2}});
        InvalidFileException shape = assertThrows(InvalidFileException.class, () -> ShardStore.open(out));
        assertTrue(shape.getMessage().contains("expected f4 [50, 30] as the metadata says, found f4 [1, 2]"), shape.getMessage());
        Files.delete(out.resolve("shard_000002.npy"));
        Files.delete(out.resolve("shard_000001.npy"));
        MemfitException missing = assertThrows(MemfitException.class, () -> ShardStore.validate(out));
        assertTrue(missing.getMessage().contains("shard_000001.npy: expected the shard listed in shard_metadata.json, found no file"),
                missing.getMessage());
        MemfitException zero = assertThrows(MemfitException.class, () -> ShardWriter.builder().setInput(input)
                .optShardSize(0).write(dir.resolve("zero")));
        assertTrue(zero.getMessage().contains("shard size must be at least 1"), zero.getMessage());
    }

    @Test
    void progressGoesToTheListenerInCells() {
        Path out = dir.resolve("listened");
        dev.memfit.RecordingProgress first = new dev.memfit.RecordingProgress();
        ShardWriter.builder().setInput(input).optShardSize(50).optProgress(first).write(out);
        dev.memfit.RecordingProgress.Seen task = first.only();
        assertEquals("Sharding atlas.h5ad", task.name());
        assertEquals(120, task.total());
        assertEquals("cells", task.unit());
        assertEquals(120, task.steps().get(), "every cell once");
        assertTrue(task.closed().get());
        dev.memfit.RecordingProgress again = new dev.memfit.RecordingProgress();
        assertEquals(0, ShardWriter.builder().setInput(input).optShardSize(50).optProgress(again).write(out).written());
        assertEquals(120, again.only().steps().get(), "a resumed run counts the finished shards' cells, not more");
    }

    @Test
    void theBuilderSaysWhatIsMissing() {
        MemfitException noInput = assertThrows(MemfitException.class, () -> ShardWriter.builder().write(dir.resolve("x")));
        assertTrue(noInput.getMessage().startsWith("setInput(file) is required"), noInput.getMessage());
        MemfitException noListener = assertThrows(MemfitException.class,
                () -> ShardWriter.builder().setInput(input).optProgress(null).write(dir.resolve("x")));
        assertTrue(noListener.getMessage().contains("ProgressListener.silent()"), noListener.getMessage());
        assertTrue(Files.notExists(dir.resolve("x")), "nothing written before the settings are valid");
    }
}
