package dev.memfit.shard;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.io.hdf5.H5ad;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * obs and var must match X (anndata refuses to build such an object): a short obs index once made {@code shard}
 * invent cell ids and exit 0. Also the option values that would give empty shards.
 */
class FrameLengthsTest {

    @TempDir
    Path dir;

    /** anndata's write_h5ad of 30 cells x 8 genes, then one dataset of obs or var rewritten by h5py with n entries. */
    private Path withLength(String name, String dataset, int n) {
        Path file = dir.resolve(name);
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad, h5py
                rng = np.random.default_rng(8)
                x = sp.csr_matrix(((rng.random((30, 8)) < 0.4) * rng.integers(1, 9, (30, 8))).astype(np.float32))
                obs = pd.DataFrame({'batch': pd.Categorical(rng.choice(['a', 'b'], 30)), 'depth': rng.random(30)},
                                   index=['cell%d' % i for i in range(30)])
                var = pd.DataFrame(index=['gene%d' % j for j in range(8)])
                ad.AnnData(x, obs=obs, var=var).write_h5ad(sys.argv[1])
                path, n = sys.argv[2], int(sys.argv[3])
                if path:
                    with h5py.File(sys.argv[1], 'r+') as f:
                        old = f[path][:]
                        new = np.resize(old, n)
                        attrs = dict(f[path].attrs)
                        del f[path]
                        f.create_dataset(path, data=new, dtype=old.dtype)
                        for k, v in attrs.items():
                            f[path].attrs[k] = v
                print('ok')
                """, file, dataset, n));
        return file;
    }

    @Test
    void anObsOrVarNotMatchingXIsRefusedAtOpenAndShardWritesNothing() {
        record Case(String file, String dataset, int n, String expected) {
        }
        List<Case> cases = List.of(
                new Case("short-index.h5ad", "obs/_index", 29, "/obs/_index of n_obs = 30 entries (one per cell, row of X), found 29 entries"),
                new Case("long-index.h5ad", "obs/_index", 31, "/obs/_index of n_obs = 30 entries (one per cell, row of X), found 31 entries"),
                new Case("short-column.h5ad", "obs/depth", 12, "/obs/depth of n_obs = 30 entries (one per cell, row of X), found 12 entries"),
                new Case("short-codes.h5ad", "obs/batch/codes", 20, "/obs/batch/codes of n_obs = 30 entries (one per cell, row of X), found 20 entries"),
                new Case("short-var.h5ad", "var/_index", 7, "/var/_index of n_vars = 8 entries (one per gene, column of X), found 7 entries"));
        for (Case c : cases) {
            Path file = withLength(c.file(), c.dataset(), c.n());
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> H5ad.open(file).close());
            assertEquals(file + ": expected " + c.expected() + "; the " + c.dataset().substring(0, 3)
                    + " dataframe does not match X", e.getMessage());
            Path shards = dir.resolve("shards-" + c.file());
            assertThrows(InvalidFileException.class, () -> ShardWriter.builder().setInput(file)
                    .optProgress(ProgressListener.silent()).write(shards));
            assertTrue(Files.notExists(shards), "nothing written for " + c.file());
        }
        // the file as anndata wrote it opens, and its shards name every cell
        Path good = withLength("good.h5ad", "", 0);
        try (H5ad h5ad = H5ad.open(good)) {
            assertEquals(30, h5ad.index("obs").length);
        }
    }

    @Test
    void optionsThatWouldGiveEmptyShardsAreRefused() {
        Path file = withLength("atlas.h5ad", "", 0);
        Path shards = dir.resolve("shards");
        MemfitException empty = assertThrows(MemfitException.class, () -> ShardWriter.builder().setInput(file)
                .optVocabulary(new GeneVocabulary(List.of())).optProgress(ProgressListener.silent()).write(shards));
        assertTrue(empty.getMessage().startsWith("optVocabulary: an empty vocabulary (--vocab [] on the command line)"),
                empty.getMessage());
        MemfitException disjoint = assertThrows(MemfitException.class, () -> ShardWriter.builder().setInput(file)
                .optVocabulary(new GeneVocabulary(List.of("CD3E", "MS4A1"))).optProgress(ProgressListener.silent())
                .write(shards));
        assertEquals("none of the 2 genes of the vocabulary (CD3E, MS4A1) is among the 8 genes of " + file
                + " (gene0, gene1, gene2, ...): every cell would be empty; give a vocabulary (--vocab) with the file's "
                + "gene names (its var index)", disjoint.getMessage());
        try (H5ad h5ad = H5ad.open(file)) {
            MemfitException none = assertThrows(MemfitException.class, () -> GeneVocabulary.topByTotalCounts(h5ad, 0));
            assertTrue(none.getMessage().startsWith("topByTotalCounts(h5ad, n) needs n >= 1 genes (--top-genes"),
                    none.getMessage());
            assertEquals(8, GeneVocabulary.topByTotalCounts(h5ad, 100).genes().size(), "more than n_vars: all genes");
        }
        assertTrue(Files.notExists(shards));
        // one gene in common is enough: the others are zero columns
        ShardWriter.builder().setInput(file).optVocabulary(new GeneVocabulary(List.of("CD3E", "gene5")))
                .optProgress(ProgressListener.silent()).write(shards);
        try (ShardStore store = ShardStore.open(shards)) {
            assertEquals(30, store.size());
            assertEquals(List.of("CD3E", "gene5"), store.vocabulary().genes());
        }
    }
}
