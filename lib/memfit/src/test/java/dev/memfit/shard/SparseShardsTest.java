package dev.memfit.shard;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.InvalidFileException;
import dev.memfit.PythonPeer;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** CSR shards against what anndata wrote and what numpy/scipy read back from the shard files. */
class SparseShardsTest {

    @TempDir
    static Path dir;
    static Path input;
    /** anndata's X as a dense float32 (cells x genes) .npy, written by numpy. */
    static Path dense;

    @BeforeAll
    static void atlas() {
        input = dir.resolve("atlas.h5ad");
        dense = dir.resolve("atlas-dense.npy");
        // anndata's default write_h5ad of a CSR X; every 7th cell has no values at all, some values are fractional
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(3)
                x = ((rng.random((130, 30)) < 0.2) * rng.gamma(1.5, 3.0, (130, 30))).astype(np.float32)
                x[::7] = 0
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T'], 130))},
                                   index=['c%d' % i for i in range(130)])
                a = ad.AnnData(sp.csr_matrix(x), obs=obs, var=pd.DataFrame(index=['g%d' % j for j in range(30)]))
                a.write_h5ad(sys.argv[1])
                back = ad.read_h5ad(sys.argv[1])
                assert sp.isspmatrix_csr(back.X)
                np.save(sys.argv[2], back.X.toarray())
                print('ok')
                """, input, dense));
    }

    /** Every cell of a store, as the loader's source serves it, against rows of a dense float32 .npy. */
    private static void assertCellsEqual(Path folder, Path expectedRows) {
        try (ShardStore store = ShardStore.open(folder); NpyArray expected = Npy.map(expectedRows);
             Arena arena = Arena.ofConfined()) {
            assertEquals(expected.rows(), store.size());
            assertEquals(expected.rowElements(), store.sampleShape().get(0));
            long rowBytes = store.sampleBytes();
            MemorySegment cell = arena.allocate(rowBytes);
            MemorySegment want = arena.allocate(rowBytes);
            for (long i = 0; i < store.size(); i++) {
                // garbage first: a densified row must overwrite every value, zeros included
                cell.fill((byte) 0x5a);
                store.read(i, cell);
                expected.copyRows(i, 1, want);
                assertEquals(-1, cell.mismatch(want), "cell " + i + " of " + folder.getFileName());
            }
        }
    }

    @Test
    void sparseIsTheDefaultForCsrAndEveryCellIsAnndatasRow() {
        Path sparse = dir.resolve("sparse");
        ShardWriter.Result result = ShardWriter.builder().setInput(input).optShardSize(40).write(sparse);
        assertEquals(ShardLayout.SPARSE, result.layout());
        assertEquals(4, result.shards());
        ShardStore.validate(sparse);
        assertCellsEqual(sparse, dense);
        try (ShardStore store = ShardStore.open(sparse)) {
            assertEquals(ShardLayout.SPARSE, store.layout());
            assertEquals(List.of(40L, 40L, 40L, 10L), Arrays.stream(store.shardSizes()).boxed().toList());
            assertEquals(12, store.shardFiles().size(), "data, indices and indptr of each shard");
            // a container of 1 GiB with all but half the shards' bytes in use: read from storage, a whole batch a thread
            long bytes = store.storedBytes();
            assertFalse(store.readsFromMemory(new dev.memfit.ProcessMemory(64L << 30, 32L << 30, 1L << 30, (1L << 30) - bytes / 2)));
            assertTrue(store.readsFromMemory(new dev.memfit.ProcessMemory(64L << 30, 32L << 30, 1L << 30, 100L << 20)));
        }
        // the files are plain numpy arrays: scipy rebuilds each shard as the rows of anndata's X, indices sorted
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad
                x = ad.read_h5ad(sys.argv[1]).X
                for s, first in enumerate(range(0, 130, 40)):
                    stem = '%s/shard_%06d' % (sys.argv[2], s)
                    data, indices, indptr = (np.load(stem + suffix) for suffix in ('.data.npy', '.indices.npy', '.indptr.npy'))
                    assert data.dtype == np.float32 and indices.dtype == np.int32 and indptr.dtype == np.int64
                    shard = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, 30))
                    assert shard.has_sorted_indices
                    assert (shard != x[first:first + 40]).nnz == 0
                    empty = np.flatnonzero(np.diff(indptr) == 0)
                    assert all((first + e) % 7 == 0 or x[first + e].nnz == 0 for e in empty) and len(empty) > 0
                print('ok')
                """, input, sparse));

        Path denseShards = dir.resolve("dense");
        assertEquals(ShardLayout.DENSE, ShardWriter.builder().setInput(input).optShardSize(40)
                .optLayout(ShardLayout.DENSE).write(denseShards).layout());
        ShardStore.validate(denseShards);
        assertCellsEqual(denseShards, dense);
    }

    @Test
    void aVocabularyDropsAndReordersGenes() throws IOException {
        // reversed, every third gene dropped, and two genes the file lacks
        List<String> genes = new ArrayList<>();
        for (int g = 29; g >= 0; g--) {
            if (g % 3 != 1) {
                genes.add("g" + g);
            }
            if (g == 15) {
                genes.add("not_in_file");
            }
        }
        genes.add(0, "also_missing");
        GeneVocabulary vocabulary = new GeneVocabulary(genes);
        Path expected = dir.resolve("vocabulary-expected.npy");
        Path vocabularyFile = dir.resolve("vocabulary.json");
        vocabulary.write(vocabularyFile);
        assertEquals("ok", PythonPeer.run("""
                import sys, json, numpy as np, anndata as ad
                a = ad.read_h5ad(sys.argv[1])
                names = list(a.var_names)
                x = a.X.toarray()
                out = np.zeros((a.n_obs, len(json.load(open(sys.argv[2])))), dtype=np.float32)
                for j, gene in enumerate(json.load(open(sys.argv[2]))):
                    if gene in names:
                        out[:, j] = x[:, names.index(gene)]
                np.save(sys.argv[3], out)
                print('ok')
                """, input, vocabularyFile, expected));
        Path sparse = dir.resolve("vocabulary-sparse");
        ShardWriter.builder().setInput(input).optShardSize(50).optVocabulary(vocabulary).write(sparse);
        ShardStore.validate(sparse);
        assertCellsEqual(sparse, expected);
        assertEquals("sorted", PythonPeer.run("""
                import sys, glob, numpy as np
                for stem in sorted(glob.glob(sys.argv[1] + '/shard_*.indptr.npy')):
                    indptr = np.load(stem)
                    indices = np.load(stem.replace('.indptr.', '.indices.'))
                    for r in range(len(indptr) - 1):
                        row = indices[indptr[r]:indptr[r + 1]]
                        assert (np.diff(row) > 0).all(), (stem, r, row)
                print('sorted')
                """, sparse));
        Path denseShards = dir.resolve("vocabulary-dense");
        ShardWriter.builder().setInput(input).optShardSize(50).optVocabulary(vocabulary).optLayout(ShardLayout.DENSE)
                .write(denseShards);
        assertCellsEqual(denseShards, expected);
    }

    @Test
    void denseInputStaysDenseUnlessAskedAndCanBeSparsified() {
        Path denseInput = dir.resolve("dense-x.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad
                ad.AnnData(np.load(sys.argv[1])).write_h5ad(sys.argv[2])
                print('ok')
                """, dense, denseInput));
        assertEquals(ShardLayout.DENSE, ShardWriter.builder().setInput(denseInput).optShardSize(64)
                .write(dir.resolve("from-dense")).layout());
        Path sparse = dir.resolve("from-dense-sparse");
        ShardWriter.builder().setInput(denseInput).optShardSize(64).optLayout(ShardLayout.SPARSE).write(sparse);
        ShardStore.validate(sparse);
        assertCellsEqual(sparse, dense);
        try (ShardStore store = ShardStore.open(sparse); NpyArray x = Npy.map(dense)) {
            long nonZero = 0;
            for (long v = 0; v < x.header().elementCount(); v++) {
                nonZero += x.data().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, v) != 0 ? 1 : 0;
            }
            assertEquals(nonZero, store.storedValues(), "only the non-zero values are stored");
        }
    }

    @Test
    void sparseShardsTakeAboutTheSourcesBytes() throws IOException {
        Path large = dir.resolve("large.h5ad");
        String sourceBytes = PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad
                x = sp.random(3000, 500, density=0.1, format='csr', dtype=np.float32, random_state=5)
                a = ad.AnnData(x)
                a.write_h5ad(sys.argv[1])
                x = ad.read_h5ad(sys.argv[1]).X
                print(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes)
                """, large);
        Path sparse = dir.resolve("large-sparse");
        ShardWriter.builder().setInput(large).optShardSize(1000).write(sparse);
        long shardBytes;
        try (ShardStore store = ShardStore.open(sparse)) {
            shardBytes = store.storedBytes();
            long sum = 0;
            for (Path file : store.shardFiles()) {
                sum += Files.size(file);
            }
            assertEquals(sum, shardBytes);
        }
        double ratio = shardBytes / Double.parseDouble(sourceBytes);
        assertTrue(ratio <= 1.2, "sparse shards " + shardBytes + " bytes, source X (values + indices + indptr) "
                + sourceBytes + " bytes: ratio " + ratio);
    }

    @Test
    void resumingRedoesEveryDamagedShardAndOnlyThose() throws IOException {
        Path out = dir.resolve("resume");
        ShardWriter.builder().setInput(input).optShardSize(40).write(out);
        byte[] before = Files.readAllBytes(out.resolve("shard_000002.indices.npy"));
        try (RandomAccessFile file = new RandomAccessFile(out.resolve("shard_000001.data.npy").toFile(), "rw")) {
            file.seek(file.length() - 4);
            file.writeInt(0x7f7f7f7f);
        }
        ShardWriter.Result repair = ShardWriter.builder().setInput(input).optShardSize(40).write(out);
        assertEquals(1, repair.written(), "only shard 1 rewritten: it no longer matches its checksum");
        assertEquals(1, repair.repaired().size(), repair.repaired().toString());
        assertTrue(repair.repaired().getFirst().startsWith("shard_000001 (shard_000001.data.npy: expected ")
                && repair.repaired().getFirst().contains("(corrupt or replaced)"), repair.repaired().toString());
        ShardStore.validate(out);
        assertCellsEqual(out, dense);
        assertArrayEquals(before, Files.readAllBytes(out.resolve("shard_000002.indices.npy")), "rewritten identically");

        Files.delete(out.resolve("shard_000003.indptr.npy"));
        assertEquals(1, ShardWriter.builder().setInput(input).optShardSize(40).write(out).written(),
                "only the shard missing a file");
        ShardStore.validate(out);
        assertCellsEqual(out, dense);
        try (var files = Files.list(out)) {
            assertEquals(List.of(), files.filter(f -> f.getFileName().toString().endsWith(".partial")).toList(),
                    "no temporary file left");
        }
        JsonNode metadata = ShardWriter.JSON.readTree(out.resolve(ShardWriter.METADATA).toFile());
        assertEquals("sparse", metadata.path("layout").asText());
        List<String> roles = new ArrayList<>();
        metadata.path("shards").get(0).path("files").forEach(f -> roles.add(f.path("role").asText()));
        assertEquals(List.of("data", "indices", "indptr", "metadata"), roles);
    }

    @Test
    void damagedFilesAreNamed() throws IOException {
        Path out = dir.resolve("damaged");
        ShardWriter.builder().setInput(input).optShardSize(40).write(out);
        Path indices = out.resolve("shard_000001.indices.npy");
        long dataOffset = Npy.readHeader(indices).dataOffset();
        // gene 999 for the second stored value of shard 1: past the 30 genes
        try (RandomAccessFile file = new RandomAccessFile(indices.toFile(), "rw")) {
            file.seek(dataOffset + 4);
            file.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(999).array());
        }
        InvalidFileException corrupt = assertThrows(InvalidFileException.class, () -> ShardStore.validate(out));
        assertTrue(corrupt.getMessage().contains("shard_000001.indices.npy") && corrupt.getMessage().contains("(corrupt or replaced)"),
                corrupt.getMessage());
        // opening does not read every index; reading the cell does, and names the file and the position
        long cell;
        try (NpyArray indptr = Npy.map(out.resolve("shard_000001.indptr.npy"))) {
            cell = 0;
            while (indptr.getDouble(cell + 1) < 2) {
                cell++;
            }
        }
        long badCell = 40 + cell;
        // past the end, one past it (the next cell's first gene, were it not checked) and negative
        for (int bad : new int[]{999, 30, -1}) {
            try (RandomAccessFile file = new RandomAccessFile(indices.toFile(), "rw")) {
                file.seek(dataOffset + 4);
                file.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(bad).array());
            }
            try (ShardStore store = ShardStore.open(out); Arena arena = Arena.ofConfined()) {
                MemorySegment two = arena.allocate(2 * store.sampleBytes());
                InvalidFileException read = assertThrows(InvalidFileException.class,
                        () -> store.readBatch(new long[]{badCell, badCell + 1}, two));
                assertTrue(read.getMessage().contains("shard_000001.indices.npy") && read.getMessage().contains("in [0, 30)")
                        && read.getMessage().contains("index " + bad + " at stored value 1"), read.getMessage());
            }
        }

        // row pointers that go back are caught at open
        Path indptr = out.resolve("shard_000002.indptr.npy");
        long pointerOffset = Npy.readHeader(indptr).dataOffset();
        try (RandomAccessFile file = new RandomAccessFile(indptr.toFile(), "rw")) {
            file.seek(pointerOffset + 8 * 5);
            file.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(1_000_000).array());
        }
        InvalidFileException pointers = assertThrows(InvalidFileException.class, () -> ShardStore.open(out));
        assertTrue(pointers.getMessage().contains("shard_000002.indptr.npy")
                && pointers.getMessage().contains("never decrease"), pointers.getMessage());

        // a values file of the wrong length
        Npy.write(out.resolve("shard_000002.data.npy"), new float[][]{{1, 2}});
        InvalidFileException shape = assertThrows(InvalidFileException.class, () -> ShardStore.open(out));
        assertTrue(shape.getMessage().contains("shard_000002.data.npy") && shape.getMessage().contains("as the metadata says"),
                shape.getMessage());
    }

    @Test
    void aThreadedLoaderGivesTheSameBatchesFromSparseAndDenseShards() {
        Path sparse = dir.resolve("loader-sparse");
        Path denseShards = dir.resolve("loader-dense");
        ShardWriter.builder().setInput(input).optShardSize(30).write(sparse);
        ShardWriter.builder().setInput(input).optShardSize(30).optLayout(ShardLayout.DENSE).write(denseShards);
        try (Loader fromSparse = Datasets.shards(sparse).optBatchSize(16).optShuffle(11).optThreads(3).optPrefetch(4).build();
             Loader fromDense = Datasets.shards(denseShards).optBatchSize(16).optShuffle(11).optThreads(3).optPrefetch(4).build()) {
            for (int epoch = 0; epoch < 2; epoch++) {
                List<float[]> sparseBatches = new ArrayList<>();
                List<long[]> sparseIndices = new ArrayList<>();
                for (Batch batch : fromSparse.epoch(epoch)) {
                    sparseBatches.add(batch.toFloatArray());
                    sparseIndices.add(batch.indices());
                }
                int b = 0;
                for (Batch batch : fromDense.epoch(epoch)) {
                    assertArrayEquals(sparseIndices.get(b), batch.indices(), "epoch " + epoch + " batch " + b);
                    assertArrayEquals(sparseBatches.get(b), batch.toFloatArray(), "epoch " + epoch + " batch " + b);
                    b++;
                }
                assertEquals(sparseBatches.size(), b);
                assertEquals(9, b, "130 cells in batches of 16");
            }
        }
    }

    @Test
    void validateRefusesACellWhoseGenesAreNotStrictlyAscending() throws IOException {
        Path shards = dir.resolve("unsorted");
        ShardWriter.builder().setInput(input).optShardSize(100).write(shards);
        Path indices = shards.resolve("shard_000000.indices.npy");
        long swapped;
        try (NpyArray pointers = Npy.map(shards.resolve("shard_000000.indptr.npy"));
             NpyArray genes = Npy.map(indices)) {
            // the first cell with two values: its first two genes swapped, as a writer other than ShardWriter might
            long row = 0;
            while (pointers.data().getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, row + 1)
                    - pointers.data().getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, row) < 2) {
                row++;
            }
            swapped = pointers.data().getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, row);
            long offset = genes.header().dataOffset() + swapped * Integer.BYTES;
            try (RandomAccessFile file = new RandomAccessFile(indices.toFile(), "rw")) {
                byte[] two = new byte[8];
                file.seek(offset);
                file.readFully(two);
                file.seek(offset);
                file.write(two, 4, 4);
                file.write(two, 0, 4);
            }
        }
        // the checksum recorded again, so that only the order is wrong
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        com.fasterxml.jackson.databind.node.ObjectNode metadata =
                (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(shards.resolve(ShardWriter.METADATA).toFile());
        for (JsonNode file : metadata.path("shards").get(0).path("files")) {
            if (file.path("file").asText().equals(indices.getFileName().toString())) {
                ((com.fasterxml.jackson.databind.node.ObjectNode) file).put("crc32c", ShardWriter.crc32c(indices));
            }
        }
        json.writeValue(shards.resolve(ShardWriter.METADATA).toFile(), metadata);
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> ShardStore.validate(shards));
        assertTrue(e.getMessage().contains("strictly ascending gene indices within cell")
                && e.getMessage().contains("at stored value " + (swapped + 1)), e.getMessage());
    }
}
