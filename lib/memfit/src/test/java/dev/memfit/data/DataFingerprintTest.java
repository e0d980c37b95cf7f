package dev.memfit.data;

import dev.memfit.PythonPeer;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A saved run resumes only on the same data: another file of the same name, shape and type (numpy's), or shards of
 * another matrix with the same sparsity, differ in the content part of the fingerprint; the same data read again
 * does not; and a state saved before fingerprints had a content part still compares on the rest.
 */
class DataFingerprintTest {

    @TempDir
    static Path dir;

    @BeforeAll
    static void files() {
        PythonPeer.run("""
                import sys, os, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                d = sys.argv[1]
                rng = np.random.default_rng(4)
                a = rng.random((500, 200), dtype=np.float32)
                for name, x in (('a', a), ('b', a * 1.5 + 1)):
                    os.makedirs(os.path.join(d, name))
                    np.save(os.path.join(d, name, 'data.npy'), x)
                counts = sp.random(60, 30, density=0.2, format='csr', dtype=np.float32, random_state=2)
                counts.data = np.ceil(counts.data * 10)
                for name, x in (('a', counts), ('b', counts * 2)):
                    ad.AnnData(x, obs=pd.DataFrame(index=['c%d' % i for i in range(60)]),
                               var=pd.DataFrame(index=['g%d' % j for j in range(30)])).write_h5ad(os.path.join(d, name, 'atlas.h5ad'))
                """, dir);
    }

    private static String npyFingerprint(String folder, Access access) {
        try (Loader loader = Datasets.open(dir.resolve(folder).resolve("data.npy")).optAccess(access).optBatchSize(50).build()) {
            return loader.fingerprint();
        }
    }

    private static String shardFingerprint(String folder, String output) {
        Path shards = dir.resolve(folder).resolve(output).resolve("shards");
        ShardWriter.builder().setInput(dir.resolve(folder).resolve("atlas.h5ad")).optShardSize(25).write(shards);
        try (ShardStore store = ShardStore.open(shards)) {
            return store.fingerprint();
        }
    }

    private static LoaderState state(String source) {
        return new LoaderState(source, 500, "sequential", 50, false, 0, 0);
    }

    @Test
    void anNpyOfTheSameShapeWithOtherValuesIsOtherData() {
        String a = npyFingerprint("a", Access.mapped());
        assertEquals(a, npyFingerprint("a", Access.inMemory()), "the same file mapped or loaded");
        String b = npyFingerprint("b", Access.mapped());
        assertNotEquals(a, b);
        List<String> differences = state(a).differencesFrom(state(b));
        assertEquals(1, differences.size(), differences.toString());
        assertTrue(differences.getFirst().startsWith("data: data.npy"), differences.toString());
    }

    @Test
    void shardsOfAnotherMatrixWithTheSameSparsityAreOtherData() {
        String a = shardFingerprint("a", "one");
        assertEquals(a, shardFingerprint("a", "two").replace("two", "one"), "the same file sharded again");
        String b = shardFingerprint("b", "one");
        assertNotEquals(a, b);
        assertTrue(a.replaceAll(", content crc32c [0-9a-f]+", "").equals(b.replaceAll(", content crc32c [0-9a-f]+", "")),
                "only the content tells them apart: " + a + " / " + b);
    }

    @Test
    void aStateSavedWithoutAContentPartComparesOnTheRest() {
        String now = npyFingerprint("a", Access.mapped());
        String saved = now.replaceAll(", content crc32c [0-9a-f]+", "");
        assertTrue(state(saved).differencesFrom(state(now)).isEmpty());
        assertEquals(1, state(saved.replace("[500, 200]", "[500, 201]")).differencesFrom(state(now)).size());
    }
}
