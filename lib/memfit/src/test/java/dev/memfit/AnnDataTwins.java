package dev.memfit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The same AnnData written by anndata 0.8 twice, with {@code write_h5ad} and {@code write_zarr} (its defaults: Blosc
 * lz4 chunks), and the zarr folder copied into a {@code .zarr.zip} with zarr's {@code ZipStore}: X as CSR float32
 * (its zarr arrays re-chunked small, so reads cross chunk boundaries), CSR float64 (values that float32 would round),
 * CSC float32 and dense float32 (2-D chunks of 97 x 40), each with {@code raw} (more genes than X) and a
 * {@code counts} layer, and {@code obs}/{@code var} columns of every type anndata writes: categoricals (ordered,
 * unused category, missing values, numeric categories), signed and unsigned integers of every width, float32,
 * float64, bool, strings, nullable integers and booleans with missing values. The manifest holds anndata's own
 * answers for each ({@code read_zarr}): shape, nnz, dtype, sums of X, of the layer and of raw.
 */
public final class AnnDataTwins {

    /** The layouts of X written, each as {@code NAME.h5ad}, {@code NAME.zarr} and {@code NAME.zarr.zip}. */
    public static final List<String> VARIANTS = List.of("csr32", "csr64", "csc", "dense");

    /** anndata's archive files: {@code v0.7.0|v0.7.8/adata.h5ad} and their {@code adata.zarr.zip} twins. */
    public static final Path ARCHIVES = Path.of("/usr/lib/python3/dist-packages/anndata/tests/data/archives");

    private AnnDataTwins() {
    }

    /**
     * Writes the twins into a folder.
     *
     * @param folder where they go
     * @return anndata's answers, by variant
     */
    public static JsonNode write(Path folder) {
        try {
            return new ObjectMapper().readTree(PythonPeer.run(SCRIPT, folder));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static final String SCRIPT = """
import sys, os, json, warnings, numpy as np, pandas as pd, scipy.sparse as sp, anndata, zarr
warnings.simplefilter('ignore')
d = sys.argv[1]
rng = np.random.default_rng(24)
cells, genes, raw_genes = 700, 90, 110
def counts(n, g, density):
    m = sp.random(n, g, density=density, format='csr', dtype=np.float64, random_state=rng.integers(1 << 30))
    m.data = np.round(m.data * 30) + 1
    return m
raw = counts(cells, raw_genes, 0.15)
x = raw[:, :genes].tocsr()
types = np.array(['T cell', 'B cell', 'NK', 'monocyte'])
ct = pd.Categorical(types[rng.integers(0, 4, cells)])
stage = pd.Categorical(rng.choice(['early', 'mid', 'late'], cells), categories=['early', 'mid', 'late'], ordered=True)
batch = pd.Categorical(rng.choice(['b1', 'b2'], cells)).add_categories(['b3'])
missing = pd.Series(pd.Categorical(rng.choice(['x', 'y'], cells)))
missing[rng.random(cells) < 0.1] = np.nan
ni = pd.array(rng.integers(-5, 5, cells), dtype='Int32'); ni[rng.random(cells) < 0.2] = pd.NA
nb = pd.array(rng.random(cells) < 0.5, dtype='boolean'); nb[rng.random(cells) < 0.2] = pd.NA
obs = pd.DataFrame({
    'cell_type': ct, 'stage': stage, 'batch': batch, 'maybe': missing.values,
    'level': pd.Categorical(rng.choice([10, 20, 30], cells)),
    'i8': rng.integers(-100, 100, cells).astype(np.int8), 'i16': rng.integers(-1000, 1000, cells).astype(np.int16),
    'i32': rng.integers(-10**6, 10**6, cells).astype(np.int32), 'i64': rng.integers(-10**12, 10**12, cells),
    'u8': rng.integers(0, 255, cells).astype(np.uint8), 'u16': rng.integers(0, 60000, cells).astype(np.uint16),
    'u32': rng.integers(0, 4 * 10**9, cells).astype(np.uint32), 'u64': rng.integers(0, 2**62, cells).astype(np.uint64),
    'f32': rng.normal(size=cells).astype(np.float32), 'f64': rng.normal(size=cells),
    'doublet': rng.random(cells) < 0.1, 'barcode': ['ACGT-%d-ü' % (k * 7) for k in range(cells)],
    'n_int': ni, 'n_bool': nb,
}, index=['cell-%d' % k for k in range(cells)])
var = pd.DataFrame({'symbol': ['G%d' % k for k in range(genes)], 'is_marker': np.arange(genes) % 3 == 0,
                    'mean': rng.random(genes), 'chrom': pd.Categorical(rng.choice(['1', '2', 'X'], genes))},
                   index=['ENSG%05d' % k for k in range(genes)])
raw_var = pd.DataFrame({'symbol': ['G%d' % k for k in range(raw_genes)]}, index=['ENSG%05d' % k for k in range(raw_genes)])
out = {}
def rechunk(path, name, chunk):
    root = zarr.open_group(path)
    a = root[name]
    values, compressor = a[:], a.compressor
    attrs = dict(a.attrs)
    del root[name]
    b = root.create_dataset(name, data=values, chunks=(chunk,), compressor=compressor)
    b.attrs.update(attrs)
for name, X, kwargs in [('csr32', x.astype(np.float32), {}), ('csr64', (x / 3.0).astype(np.float64), {}),
                        ('csc', sp.csc_matrix(x.astype(np.float32)), {}), ('dense', x.toarray().astype(np.float32), {'chunks': (97, 40)})]:
    a = anndata.AnnData(X=X, obs=obs, var=var, dtype=X.dtype)
    a.layers['counts'] = x.astype(np.float32)
    a.raw = anndata.AnnData(X=raw.astype(np.float32), var=raw_var, dtype=np.float32)
    a.write_h5ad(d + '/' + name + '.h5ad')
    a.write_zarr(d + '/' + name + '.zarr', **kwargs)
    if name == 'csr32':
        # X's arrays in many chunks, so that reads cross chunk boundaries
        for arr, chunk in [('X/data', 997), ('X/indices', 1009), ('X/indptr', 101)]:
            rechunk(d + '/' + name + '.zarr', arr, chunk)
    with zarr.ZipStore(d + '/' + name + '.zarr.zip', mode='w') as zs:
        zarr.copy_store(zarr.DirectoryStore(d + '/' + name + '.zarr'), zs)
    back = anndata.read_zarr(d + '/' + name + '.zarr')
    h = anndata.read_h5ad(d + '/' + name + '.h5ad')
    assert (back.obs.dtypes == h.obs.dtypes).all()
    X2 = back.X
    nnz = int(X2.nnz) if sp.issparse(X2) else int(np.count_nonzero(X2))
    out[name] = {'n_obs': int(back.n_obs), 'n_vars': int(back.n_vars), 'nnz': nnz, 'dtype': str(X2.dtype),
                 'sum': float(X2.sum(dtype=np.float64)), 'counts_sum': float(back.layers['counts'].sum(dtype=np.float64)),
                 'raw_sum': float(back.raw.X.sum(dtype=np.float64)), 'raw_vars': int(back.raw.n_vars),
                 'obs_columns': list(back.obs.columns)}
print(json.dumps(out))
            """;
}
