package dev.memfit.prep;

import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.RecordingProgress;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Everything that reads cells of an .h5ad gives the same values from a CSC X as from the CSR X of the same matrix. */
class CscConversionTest {

    @TempDir
    static Path dir;

    @BeforeAll
    static void writeWithAnndata() {
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                d = sys.argv[1]
                rng = np.random.default_rng(5)
                x = ((rng.random((257, 40)) < 0.2) * rng.integers(1, 40, (257, 40))).astype(np.float32)
                x[5] = 0
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T', 'NK'], 257))},
                                   index=['c%d' % i for i in range(257)])
                var = pd.DataFrame(index=['g%d' % j for j in range(40)])
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=var).write_h5ad(d + '/csr.h5ad')
                ad.AnnData(sp.csc_matrix(x), obs=obs, var=var).write_h5ad(d + '/csc.h5ad', compression='gzip')
                print('ok')
                """, dir));
    }

    private static MemorySegment all(ShardStore store, Arena arena) {
        long rowBytes = store.vocabulary().genes().size() * 4L;
        MemorySegment rows = arena.allocate(store.size() * rowBytes);
        for (long i = 0; i < store.size(); i++) {
            store.read(i, rows.asSlice(i * rowBytes, rowBytes));
        }
        return rows;
    }

    @Test
    void shardsOfACscFileEqualShardsOfItsCsrTwin() {
        RecordingProgress progress = new RecordingProgress();
        ShardWriter.builder().setInput(dir.resolve("csc.h5ad")).optShardSize(100).optProgress(progress).write(dir.resolve("csc-shards"));
        ShardWriter.builder().setInput(dir.resolve("csr.h5ad")).optShardSize(100).optProgress(ProgressListener.silent())
                .write(dir.resolve("csr-shards"));
        assertEquals("Transposing X (CSC to CSR)", progress.tasks().getFirst().name(), "the transpose's bar comes first");
        ShardStore.validate(dir.resolve("csc-shards"));
        try (ShardStore csc = ShardStore.open(dir.resolve("csc-shards")); ShardStore csr = ShardStore.open(dir.resolve("csr-shards"));
             Arena arena = Arena.ofConfined()) {
            assertEquals(257, csc.size());
            assertEquals(dev.memfit.shard.ShardLayout.SPARSE, csc.layout(), "a CSC X shards to CSR, through its transpose");
            assertEquals(csr.vocabulary().genes(), csc.vocabulary().genes());
            assertEquals(-1, all(csc, arena).mismatch(all(csr, arena)));
        }
    }

    @Test
    void preprocessingACscFileWritesWhatItsCsrTwinGives() {
        Preprocess.Result fromCsc = Preprocess.builder().setInput(dir.resolve("csc.h5ad")).optHighlyVariable(12)
                .optProgress(ProgressListener.silent()).run(dir.resolve("from-csc.h5ad"));
        Preprocess.Result fromCsr = Preprocess.builder().setInput(dir.resolve("csr.h5ad")).optHighlyVariable(12)
                .optProgress(ProgressListener.silent()).run(dir.resolve("from-csr.h5ad"));
        assertEquals(fromCsr.genes(), fromCsc.genes());
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad
                a, b = ad.read_h5ad(sys.argv[1]), ad.read_h5ad(sys.argv[2])
                assert list(a.var_names) == list(b.var_names)
                assert np.array_equal(a.X.toarray(), b.X.toarray())
                assert list(a.obs['cell_type']) == list(b.obs['cell_type'])
                print('ok')
                """, dir.resolve("from-csc.h5ad"), dir.resolve("from-csr.h5ad")));
    }

    @Test
    void aStreamOfACscFileCarriesEachCellsRow() {
        Path csc = dir.resolve("csc.h5ad");
        try (H5ad truth = H5ad.open(dir.resolve("csr.h5ad")); Arena arena = Arena.ofConfined();
             Loader stream = Datasets.h5ad(csc).optBlockShuffle(16, 5).optBatchSize(10).optThreads(3)
                     .optShuffle(7).build()) {
            long rowBytes = 40 * 4L;
            MemorySegment all = arena.allocate(257 * rowBytes);
            truth.readRows(0, 257, all);
            long seen = 0;
            for (Batch batch : stream.epoch(0)) {
                long[] indices = batch.indices();
                for (int i = 0; i < indices.length; i++) {
                    assertEquals(-1, batch.data().asSlice(i * rowBytes, rowBytes).mismatch(all.asSlice(indices[i] * rowBytes, rowBytes)),
                            "cell " + indices[i]);
                }
                seen += indices.length;
            }
            assertEquals(257, seen);
        }
    }
}
