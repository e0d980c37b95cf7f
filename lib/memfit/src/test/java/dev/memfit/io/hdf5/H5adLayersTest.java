package dev.memfit.io.hdf5;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.Formats;
import dev.memfit.prep.Preprocess;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code raw/X} and {@code layers/NAME} read as X ({@code optLayer}), on anndata's own archive files and on a file
 * anndata 0.8 writes with its defaults the way atlases are kept: normalized values in X, raw counts in
 * {@code layers["counts"]} (stored CSC, as a column-sliced matrix is) and in {@code raw} (more genes than X, with a
 * {@code raw/var} of their own). Every value is compared with what anndata reads.
 */
class H5adLayersTest {

    @TempDir
    static Path dir;

    private static final Path ARCHIVE = Path.of("/usr/lib/python3/dist-packages/anndata/tests/data/archives");
    private static Path atlas;

    @BeforeAll
    static void write() {
        atlas = dir.resolve("atlas.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad, pandas as pd
                rng = np.random.default_rng(4)
                counts = sp.random(300, 60, density=0.2, format='csr', random_state=5, dtype=np.float32)
                counts.data = np.ceil(counts.data * 20).astype(np.float32)
                counts[np.arange(300), rng.integers(0, 60, 300)] = 3   # no empty cell
                counts = sp.csr_matrix(counts)
                full = ad.AnnData(counts, var=pd.DataFrame(index=[f'gene{g}' for g in range(60)]),
                                  obs=pd.DataFrame(index=[f'cell{c}' for c in range(300)]))
                full.raw = full
                keep = full[:, :45].copy()                     # X and layers keep 45 genes; raw keeps all 60
                normalized = keep.X.multiply(1e4 / keep.X.sum(axis=1)).tocsr()
                normalized.data = np.log1p(normalized.data)
                keep.layers['counts'] = sp.csc_matrix(keep.X)
                keep.X = normalized.astype(np.float32)
                keep.write_h5ad(sys.argv[1])
                print('ok')
                """, atlas));
    }

    /** anndata's reading of one matrix: shape, float64 sum, the var index, and every row's sum. */
    private static String reference(Path file, String matrix) {
        return PythonPeer.run("""
                import sys, numpy as np, anndata as ad
                a = ad.read_h5ad(sys.argv[1])
                name = sys.argv[2]
                m, var = (a.raw.X, a.raw.var_names) if name == 'raw/X' else (a.X, a.var_names) if name == 'X' \\
                    else (a.layers[name.removeprefix('layers/')], a.var_names)
                m = m.toarray() if hasattr(m, 'toarray') else np.asarray(m)
                print(m.shape[0], m.shape[1], repr(float(m.astype(np.float64).sum())), ','.join(var))
                print(' '.join(repr(float(x)) for x in m.astype(np.float64).sum(axis=1)))
                """, file, matrix);
    }

    private static void assertMatrix(Path file, String layer, String matrix) {
        String[] reference = reference(file, matrix).split("\n");
        String[] head = reference[0].split(" ");
        double[] rowSums = Arrays.stream(reference[1].split(" ")).mapToDouble(Double::parseDouble).toArray();
        try (H5ad h5ad = H5ad.builder().setFile(file).optLayer(layer).optProgress(ProgressListener.silent()).open();
             Arena arena = Arena.ofConfined()) {
            assertEquals(matrix, h5ad.layer());
            assertEquals(Long.parseLong(head[0]), h5ad.observations(), file + " " + layer);
            assertEquals(Long.parseLong(head[1]), h5ad.variables(), file + " " + layer);
            assertEquals(Double.parseDouble(head[2]), h5ad.sum(), 1e-9 * Math.abs(Double.parseDouble(head[2])), file + " " + layer);
            assertEquals(head.length > 3 ? head[3] : "", String.join(",", h5ad.index("var")), file + " " + layer);
            MemorySegment rows = arena.allocate(h5ad.observations() * h5ad.variables() * Float.BYTES);
            h5ad.readRows(0, Math.toIntExact(h5ad.observations()), rows);
            for (int r = 0; r < rowSums.length; r++) {
                double sum = 0;
                for (long g = 0; g < h5ad.variables(); g++) {
                    sum += rows.getAtIndex(ValueLayout.JAVA_FLOAT, r * h5ad.variables() + g);
                }
                // the rows come as float32: a float64 layer's values are rounded to the nearest float32
                assertEquals(rowSums[r], sum, 1e-5 * Math.max(1, Math.abs(rowSums[r])), file + " " + layer + " row " + r);
            }
        }
    }

    @Test
    void anndatasArchiveFilesReadTheirRawAndLayers() {
        for (String version : List.of("v0.7.0", "v0.7.8")) {
            Path file = ARCHIVE.resolve(version).resolve("adata.h5ad");
            assertMatrix(file, "X", "X");
            assertMatrix(file, "raw/X", "raw/X");
            assertMatrix(file, "raw", "raw/X");
            assertMatrix(file, "sparse", "layers/sparse");
            assertMatrix(file, "layers/array", "layers/array");
        }
    }

    @Test
    void anAtlasWithCountsBesideNormalizedValues() {
        assertMatrix(atlas, "X", "X");
        assertMatrix(atlas, "counts", "layers/counts");   // stored CSC: transposed on first read
        assertMatrix(atlas, "raw/X", "raw/X");
    }

    @Test
    void theDescriptionListsEveryMatrix() {
        Formats.DataFile described = Formats.open(ARCHIVE.resolve("v0.7.8/adata.h5ad"));
        String matrices = String.valueOf(described.facts().get("matrices"));
        assertEquals("X: 30 x 20 csr_matrix float32; raw/X: 30 x 40 csr_matrix float32; layers/array: 30 x 20 dense "
                + "float64; layers/sparse: 30 x 20 csr_matrix float64", matrices);
        assertEquals("float32", described.facts().get("dtype"));
        Formats.DataFile raw = Formats.openH5ad(atlas, atlas, "raw/X");
        assertEquals(60L, raw.facts().get("n_vars"));
        assertTrue(String.valueOf(raw.facts().get("format")).startsWith("AnnData .h5ad, raw/X CSR"), raw.facts().toString());
    }

    @Test
    void aMissingLayerNamesTheMatricesThere() {
        MemfitException e = assertThrows(MemfitException.class,
                () -> H5ad.builder().setFile(atlas).optLayer("spliced").open());
        assertEquals(atlas + ": no matrix layers/spliced to read as X; the file has X, raw/X, layers/counts", e.getMessage());
    }

    @Test
    void shardsOfRawCountsHoldRawVarsGenesAndValues() {
        Path folder = dir.resolve("raw-shards");
        ShardWriter.builder().setInput(atlas).optLayer("raw/X").optShardSize(128).optProgress(ProgressListener.silent())
                .write(folder);
        String[] reference = reference(atlas, "raw/X").split("\n");
        double[] rowSums = Arrays.stream(reference[1].split(" ")).mapToDouble(Double::parseDouble).toArray();
        try (ShardStore store = ShardStore.open(folder); Arena arena = Arena.ofConfined()) {
            assertEquals(List.of(reference[0].split(" ")[3].split(",")), store.vocabulary().genes());
            MemorySegment row = arena.allocate(store.sampleBytes());
            for (int r = 0; r < rowSums.length; r++) {
                store.read(r, row);
                double sum = 0;
                for (long g = 0; g < 60; g++) {
                    sum += row.getAtIndex(ValueLayout.JAVA_FLOAT, g);
                }
                assertEquals(rowSums[r], sum, 1e-6 * Math.max(1, rowSums[r]), "cell " + r);
            }
        }
        String metadata = readString(folder.resolve("shard_metadata.json"));
        assertTrue(metadata.replaceAll("\\s", "").contains("\"layer\":\"raw/X\""), metadata);
    }

    @Test
    void preprocessingTheCountsLayerEqualsPreprocessingAFileOfCounts() {
        // the same counts as X of a file of their own: the outputs must agree value for value
        Path countsAsX = dir.resolve("counts-as-x.h5ad");
        PythonPeer.run("""
                import sys, anndata as ad
                a = ad.read_h5ad(sys.argv[1])
                ad.AnnData(a.layers['counts'].tocsr(), obs=a.obs[[]], var=a.var[[]]).write_h5ad(sys.argv[2])
                """, atlas, countsAsX);
        Path fromLayer = dir.resolve("from-layer.h5ad");
        Path fromFile = dir.resolve("from-file.h5ad");
        Preprocess.builder().setInput(atlas).optLayer("counts").optHighlyVariable(20)
                .optProgress(ProgressListener.silent()).run(fromLayer);
        Preprocess.builder().setInput(countsAsX).optHighlyVariable(20).optProgress(ProgressListener.silent()).run(fromFile);
        assertEquals("True True", PythonPeer.run("""
                import sys, numpy as np, anndata as ad
                a, b = ad.read_h5ad(sys.argv[1]), ad.read_h5ad(sys.argv[2])
                print(list(a.var_names) == list(b.var_names), bool((a.X != b.X).nnz == 0))
                """, fromLayer, fromFile));
    }

    @Test
    void theStreamReadsALayer() {
        double expected = Double.parseDouble(reference(atlas, "layers/counts").split("\n")[0].split(" ")[2]);
        try (Loader loader = Datasets.h5ad(atlas).optLayer("counts").optBlockShuffle(64, 4).optBatchSize(50).optShuffle(3).build()) {
            assertTrue(loader.describe().contains("layers/counts"), loader.describe());
            double sum = 0;
            long cells = 0;
            for (Batch batch : loader.epoch(0)) {
                MemorySegment data = batch.data();
                for (long v = 0; v < (long) batch.size() * 45; v++) {
                    sum += data.getAtIndex(ValueLayout.JAVA_FLOAT, v);
                }
                cells += batch.size();
            }
            assertEquals(300, cells);
            assertEquals(expected, sum, 1e-9 * expected);
        }
    }

    private static String readString(Path file) {
        try {
            return Files.readString(file);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
