package dev.memfit.io.zarr;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.InvalidFileException;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * AnnData stores as anndata 0.8 writes them with its defaults ({@code write_zarr}: Blosc lz4 with byte shuffle, CSR
 * or dense {@code X}, dataframes with categoricals, strings, integers, booleans and floats), read the way the AnnData
 * integration will read them, and every array of the {@code .zarr.zip} archives anndata ships (written by anndata
 * 0.7.0 and 0.7.8, old-style categoricals, some zip entries deflated), compared with zarr-python.
 */
class ZarrAnnDataTest {

    private static final Path ARCHIVES = Path.of("/usr/lib/python3/dist-packages/anndata/tests/data/archives");

    @TempDir
    static Path dir;
    static JsonNode expected;

    @BeforeAll
    static void write() throws Exception {
        String manifest = PythonPeer.run("""
                import sys, json, hashlib, numpy as np, pandas as pd, scipy.sparse as sp, anndata, zarr
                d = sys.argv[1]
                rng = np.random.default_rng(7)
                cells, genes = 3000, 400
                X = sp.random(cells, genes, density=0.08, format='csr', dtype=np.float32, random_state=7)
                X.data = np.round(X.data * 20).astype(np.float32) + 1
                types = np.array(['T cell', 'B cell', 'NK', 'monocyte'])
                obs = pd.DataFrame({
                    'cell_type': pd.Categorical(types[rng.integers(0, 4, cells)]),
                    'stage': pd.Categorical(rng.choice(['early', 'mid', 'late'], cells), categories=['early', 'mid', 'late'], ordered=True),
                    'n_counts': np.asarray(X.sum(axis=1)).ravel().astype(np.int64),
                    'score': rng.normal(size=cells),
                    'is_doublet': rng.random(cells) < 0.1,
                    'donor': ['donor-%d' % (k % 17) for k in range(cells)],        # anndata makes it categorical
                    'barcode': ['ACGT-%d-ü' % (k * 7) for k in range(cells)],     # unique: stays strings
                }, index=['cell-%d' % k for k in range(cells)])
                var = pd.DataFrame({'symbol': ['G%d' % k for k in range(genes)], 'highly_variable': np.arange(genes) % 3 == 0},
                                   index=['ENSG%05d' % k for k in range(genes)])
                a = anndata.AnnData(X=X, obs=obs, var=var)
                a.obsm['X_pca'] = rng.normal(size=(cells, 12)).astype(np.float32)
                a.write_zarr(d + '/sparse.zarr')
                dense = anndata.AnnData(X=X.toarray()[:, :50], obs=obs[['cell_type']])
                dense.write_zarr(d + '/dense.zarr')
                def sha(values):
                    v = np.ascontiguousarray(values)
                    return hashlib.sha256(v.astype(v.dtype.newbyteorder('<') if v.dtype.itemsize > 1 else v.dtype).tobytes()).hexdigest()
                back = anndata.read_zarr(d + '/sparse.zarr')
                out = {
                    'row_sums': np.asarray(back.X.sum(axis=1)).ravel().tolist(),
                    'weighted': np.asarray(back.X @ np.arange(genes, dtype=np.float64)).ravel().tolist(),
                    'nnz': int(back.X.nnz),
                    'row_1234': back.X[1234].toarray().ravel().tolist(),
                    'obs': {c: (back.obs[c].astype(str).tolist() if back.obs[c].dtype.kind in 'OU' or str(back.obs[c].dtype) == 'category'
                                else back.obs[c].astype(float).tolist()) for c in back.obs.columns},
                    'obs_names': back.obs_names.tolist(),
                    'var_symbols': back.var['symbol'].tolist(),
                    'pca': sha(back.obsm['X_pca']),
                    'dense': sha(anndata.read_zarr(d + '/dense.zarr').X),
                    'dense_chunks': list(zarr.open(d + '/dense.zarr')['X'].chunks),
                    'data_chunks': list(zarr.open(d + '/sparse.zarr')['X/data'].chunks),
                }
                # every array of the archives, as zarr-python reads it
                archives = {}
                for v in ('v0.7.0', 'v0.7.8'):
                    z = zarr.open(zarr.ZipStore(sys.argv[2] + '/' + v + '/adata.zarr.zip', mode='r'), mode='r')
                    arrays = {}
                    def walk(g, p):
                        for k, arr in g.arrays():
                            x = arr[...]
                            if x.dtype.names is not None:
                                arrays[p + k] = {'unsupported': str(x.dtype)}
                            elif x.dtype == object or x.dtype.kind in 'US':
                                arrays[p + k] = {'strings': [str(s) for s in x.reshape(-1)]}
                            else:
                                arrays[p + k] = {'sha': sha(x), 'shape': list(x.shape), 'sum': float(x.astype('f8').sum())}
                        for k, sub in g.groups():
                            walk(sub, p + k + '/')
                    walk(z, '')
                    ad = anndata.read_zarr(zarr.ZipStore(sys.argv[2] + '/' + v + '/adata.zarr.zip', mode='r'))
                    arrays['_obs_cat'] = {'strings': ad.obs['obs_cat'].astype(str).tolist()}
                    arrays['_row_sums'] = {'values': np.asarray(ad.X.sum(axis=1)).ravel().tolist()}
                    archives[v] = arrays
                out['archives'] = archives
                print(json.dumps(out))
                """, dir, ARCHIVES);
        expected = Zarr.JSON.readTree(manifest);
    }

    @Test
    void aSparseAnnDataReadsRowByRowAsAnndataReadsIt() {
        try (Zarr zarr = Zarr.open(dir.resolve("sparse.zarr"))) {
            assertEquals("anndata", zarr.attributes("").encodingType().orElseThrow());
            ZarrAttributes x = zarr.attributes("X");
            assertEquals("csr_matrix", x.encodingType().orElseThrow());
            assertArrayEquals(new long[] {3000, 400}, x.longs("shape").orElseThrow());
            assertEquals("0.1.0", x.string("encoding-version").orElseThrow());
            ZarrArray indptr = zarr.array("X/indptr");
            ZarrArray indices = zarr.array("X/indices");
            ZarrArray data = zarr.array("X/data");
            assertEquals("blosc(lz4, shuffle)", data.compressor());
            assertEquals(ZarrDType.Kind.FLOAT, data.dtype().kind());
            assertEquals(4, data.dtype().itemSize());
            assertEquals(expected.get("data_chunks").get(0).asInt(), data.chunks()[0]);
            long[] bounds = indptr.toLongArray();
            assertEquals(3001, bounds.length);
            assertEquals(expected.get("nnz").asLong(), bounds[3000]);
            assertEquals(bounds[3000], data.length());
            JsonNode sums = expected.get("row_sums");
            JsonNode weighted = expected.get("weighted");
            for (int row = 0; row < 3000; row++) {
                int n = Math.toIntExact(bounds[row + 1] - bounds[row]);
                float[] values = data.readFloats(bounds[row], n);
                long[] columns = indices.readLongs(bounds[row], n);
                double sum = 0;
                double byColumn = 0;
                for (int k = 0; k < n; k++) {
                    sum += values[k];
                    byColumn += values[k] * (double) columns[k];
                }
                assertEquals(sums.get(row).asDouble(), sum, 1e-3, "row " + row);
                assertEquals(weighted.get(row).asDouble(), byColumn, 1e-6 * Math.max(1, byColumn), "row " + row);
            }
            // one row exactly, densified
            int row = 1234;
            int n = Math.toIntExact(bounds[row + 1] - bounds[row]);
            float[] dense = new float[400];
            float[] values = data.readFloats(bounds[row], n);
            long[] columns = indices.readLongs(bounds[row], n);
            for (int k = 0; k < n; k++) {
                dense[(int) columns[k]] = values[k];
            }
            JsonNode want = expected.get("row_1234");
            for (int c = 0; c < 400; c++) {
                assertEquals(want.get(c).floatValue(), dense[c], "column " + c);
            }
        }
    }

    @Test
    void missingChunksOfArraysAnndataWritesWholeAreRefused() throws Exception {
        // anndata writes every chunk: a store missing one of X/data's, or of a column's, is damaged (fill values
        // would back the counts the row pointers and the shapes claim with nothing in the store)
        for (String key : List.of("X/data/0", "obs/score/0")) {
            Path copy = dir.resolve("missing-" + key.replace('/', '-') + ".zarr");
            try (var files = Files.walk(dir.resolve("sparse.zarr"))) {
                for (Path from : files.toList()) {
                    Files.copy(from, copy.resolve(dir.resolve("sparse.zarr").relativize(from).toString()));
                }
            }
            Files.delete(copy.resolve(key));
            try (ZarrAnnData data = ZarrAnnData.open(copy); Arena arena = Arena.ofConfined()) {
                InvalidFileException e = assertThrows(InvalidFileException.class, () -> {
                    data.readRows(0, 1, arena.allocate(data.variables() * 4));
                    data.columns("obs");
                });
                assertTrue(e.getMessage().startsWith(copy.resolve(key) + ": expected chunk [0] of "), e.getMessage());
                assertTrue(e.getMessage().endsWith("found no such key in the store"), e.getMessage());
            }
        }
    }

    @Test
    void dataframesWithCategoricalsStringsIntsBoolsAndFloats() {
        try (Zarr zarr = Zarr.open(dir.resolve("sparse.zarr"))) {
            ZarrAttributes obs = zarr.attributes("obs");
            assertEquals("dataframe", obs.encodingType().orElseThrow());
            assertEquals("_index", obs.string("_index").orElseThrow());
            assertEquals(List.of("cell_type", "stage", "n_counts", "score", "is_doublet", "donor", "barcode"),
                    obs.strings("column-order"));
            assertEquals(toList(expected.get("obs_names")), List.of(zarr.array("obs/_index").toStringArray()));
            assertEquals(toList(expected.get("var_symbols")), List.of(zarr.array("var/symbol").toStringArray()));
            JsonNode columns = expected.get("obs");
            for (String column : obs.strings("column-order")) {
                JsonNode want = columns.get(column);
                String path = "obs/" + column;
                if (zarr.isGroup(path)) {
                    ZarrAttributes categorical = zarr.attributes(path);
                    assertEquals("categorical", categorical.encodingType().orElseThrow());
                    assertEquals(column.equals("stage"), categorical.bool("ordered").orElseThrow(), column);
                    String[] categories = zarr.array(path + "/categories").toStringArray();
                    long[] codes = zarr.array(path + "/codes").toLongArray();
                    assertEquals(ZarrDType.Kind.INT, zarr.array(path + "/codes").dtype().kind());
                    for (int i = 0; i < codes.length; i++) {
                        assertEquals(want.get(i).asText(), categories[(int) codes[i]], column + " " + i);
                    }
                } else {
                    ZarrArray array = zarr.array(path);
                    if (array.dtype().isText()) {
                        assertEquals(toList(want), List.of(array.toStringArray()), column);
                    } else {
                        double[] values = array.toDoubleArray();
                        assertEquals(want.size(), values.length);
                        for (int i = 0; i < values.length; i++) {
                            assertEquals(want.get(i).asDouble(), values[i], column + " " + i);
                        }
                    }
                }
            }
            assertEquals(ZarrDType.Kind.BOOL, zarr.array("obs/is_doublet").dtype().kind());
            assertEquals(ZarrDType.Kind.STRING, zarr.array("obs/barcode").dtype().kind());
            assertEquals("categorical", zarr.attributes("obs/donor").encodingType().orElseThrow());
            assertEquals(List.of("barcode", "cell_type", "donor", "is_doublet", "n_counts", "score", "stage"),
                    zarr.children("obs").stream().filter(c -> !c.equals("_index")).toList());
        }
    }

    @Test
    void denseXAndObsmReadByRows() throws Exception {
        try (Zarr zarr = Zarr.open(dir.resolve("dense.zarr")); Arena arena = Arena.ofConfined()) {
            ZarrArray x = zarr.array("X");
            assertArrayEquals(new long[] {3000, 50}, x.shape());
            assertEquals(expected.get("dense_chunks").get(0).asInt(), x.chunks()[0]);
            MemorySegment all = arena.allocate(x.rowBytes() * x.length());
            x.readRows(0, x.length(), all);
            assertEquals(expected.get("dense").asText(), ZarrCodecsTest.sha256(all));
        }
        try (Zarr zarr = Zarr.open(dir.resolve("sparse.zarr")); Arena arena = Arena.ofConfined()) {
            ZarrArray pca = zarr.array("obsm/X_pca");
            assertEquals(12, pca.rowElements());
            MemorySegment all = arena.allocate(pca.rowBytes() * pca.length());
            pca.readRows(0, pca.length(), all);
            assertEquals(expected.get("pca").asText(), ZarrCodecsTest.sha256(all));
            MemorySegment rows = arena.allocate(pca.rowBytes() * 10);
            pca.readRows(2995, 5, rows);
            assertEquals(all.getAtIndex(ValueLayout.JAVA_FLOAT, 2995 * 12L + 7), rows.getAtIndex(ValueLayout.JAVA_FLOAT, 7));
            assertEquals(List.of("X_pca"), zarr.children("obsm"));
        }
    }

    @Test
    void everyArrayOfAnndatasArchiveZipsReadsAsZarrPythonReadsIt() throws Exception {
        for (String version : List.of("v0.7.0", "v0.7.8")) {
            Path zip = ARCHIVES.resolve(version).resolve("adata.zarr.zip");
            assertTrue(Files.isRegularFile(zip), zip + " (python3-anndata)");
            JsonNode arrays = expected.get("archives").get(version);
            int checked = 0;
            try (Zarr zarr = Zarr.open(zip)) {
                for (Iterator<Map.Entry<String, JsonNode>> it = arrays.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> entry = it.next();
                    String path = entry.getKey();
                    JsonNode want = entry.getValue();
                    if (path.startsWith("_")) {
                        continue;
                    }
                    if (want.has("unsupported")) {
                        InvalidFileException e = assertThrows(InvalidFileException.class, () -> zarr.array(path));
                        assertTrue(e.getMessage().contains(zip + "!/" + path + "/.zarray"), e.getMessage());
                        continue;
                    }
                    ZarrArray array = zarr.array(path);
                    if (want.has("strings")) {
                        assertEquals(toList(want.get("strings")), List.of(array.toStringArray()), version + " " + path);
                    } else {
                        try (Arena arena = Arena.ofConfined()) {
                            MemorySegment all = arena.allocate(Math.max(1, array.rowBytes() * array.length()));
                            array.readRows(0, array.length(), all);
                            assertEquals(want.get("sha").asText(), ZarrCodecsTest.sha256(all.asSlice(0,
                                    array.rowBytes() * array.length())), version + " " + array);
                        }
                    }
                    checked++;
                }
                // old-style categoricals: codes in obs/obs_cat, categories in obs/__categories/obs_cat
                assertEquals("__categories/obs_cat", zarr.attributes("obs/obs_cat").string("categories").orElseThrow());
                String[] categories = zarr.array("obs/__categories/obs_cat").toStringArray();
                long[] codes = zarr.array("obs/obs_cat").toLongArray();
                JsonNode values = arrays.get("_obs_cat").get("strings");
                for (int i = 0; i < codes.length; i++) {
                    assertEquals(values.get(i).asText(), categories[(int) codes[i]]);
                }
                // X as CSR: row sums as anndata computes them
                long[] indptr = zarr.array("X/indptr").toLongArray();
                double[] data = zarr.array("X/data").toDoubleArray();
                JsonNode sums = arrays.get("_row_sums").get("values");
                for (int row = 0; row + 1 < indptr.length; row++) {
                    double sum = 0;
                    for (long k = indptr[row]; k < indptr[row + 1]; k++) {
                        sum += (float) data[(int) k];
                    }
                    assertEquals(sums.get(row).asDouble(), sum, 1e-4, version + " row " + row);
                }
            }
            assertTrue(checked >= 70, version + ": " + checked + " arrays checked");
        }
    }

    private static List<String> toList(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(node -> out.add(node.asText()));
        return out;
    }
}
