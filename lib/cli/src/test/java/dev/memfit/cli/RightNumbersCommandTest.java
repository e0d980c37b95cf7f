package dev.memfit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Sums in float64 from the stored type, and option values that would give an empty result refused. */
class RightNumbersCommandTest {

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    private static double inspectedSum(Path file) throws Exception {
        CliRun run = run("inspect", file.toString(), "--json");
        assertEquals(0, run.status(), run.err());
        return new ObjectMapper().readTree(run.out()).get("sum").asDouble();
    }

    @Test
    void inspectSumsFloat64AndInt64InFloat64LikeNumpy(@TempDir Path dir) throws Exception {
        // values whose float32 roundings add up to a visibly different total, and int64 beyond float32's 2^24
        String[] expected = PythonPeer.run("""
                import sys, os, numpy as np
                d = sys.argv[1]
                rng = np.random.default_rng(6)
                f64 = rng.integers(0, 3, (400, 30)) + 0.1   # 0.1, 1.1 and 2.1 all round in float32, not evenly
                i64 = rng.integers(2**40, 2**41, (400, 30), dtype=np.int64) | 1
                np.save(os.path.join(d, 'f64.npy'), f64)
                np.save(os.path.join(d, 'i64.npy'), i64.astype('>i8'))
                for name, a in (('f64s', f64), ('i64s', i64)):
                    os.mkdir(os.path.join(d, name))
                    for i in range(a.shape[0]):
                        np.save(os.path.join(d, name, 'sample_%04d.npy' % i), a[i].reshape(5, 6))
                print(repr(float(f64.sum(dtype=np.float64))), repr(float(i64.sum(dtype=np.float64))),
                      repr(float(f64.astype(np.float32).sum(dtype=np.float64))))
                """, dir).split(" ");
        double f64 = Double.parseDouble(expected[0]);
        double i64 = Double.parseDouble(expected[1]);
        double roundedFirst = Double.parseDouble(expected[2]);
        assertTrue(Math.abs(roundedFirst - f64) > 1e-9 * f64, "the test data tells a float32 cast apart");
        // numpy sums pairwise, memfit in blocks: equal to a few roundings of the total
        assertEquals(f64, inspectedSum(dir.resolve("f64.npy")), 1e-13 * f64);
        assertEquals(f64, inspectedSum(dir.resolve("f64s")), 1e-13 * f64, "a folder of float64 .npy samples");
        assertNotEquals(roundedFirst, inspectedSum(dir.resolve("f64s")));
        assertEquals(i64, inspectedSum(dir.resolve("i64.npy")), 1e-13 * i64);
        assertEquals(i64, inspectedSum(dir.resolve("i64s")), 1e-13 * i64, "a folder of int64 .npy samples");
    }

    @Test
    void optionsThatGiveEmptyResultsAndFilesNotMatchingXAreRefused(@TempDir Path dir) throws Exception {
        Path atlas = dir.resolve("atlas.h5ad");
        assertEquals(0, run("generate", "atlas", "--cells", "60", "--genes", "20", "--seed", "2", "-o", atlas.toString()).status());
        Path shards = dir.resolve("shards");

        CliRun topZero = run("shard", atlas.toString(), "--output-dir", shards.toString(), "--top-genes", "0");
        assertEquals(1, topZero.status());
        assertTrue(topZero.err().contains("needs n >= 1 genes (--top-genes on the command line), got 0"), topZero.err());

        Path emptyVocabulary = Files.writeString(dir.resolve("vocab.json"), "[]");
        CliRun empty = run("shard", atlas.toString(), "--output-dir", shards.toString(), "--vocab", emptyVocabulary.toString());
        assertEquals(1, empty.status());
        assertTrue(empty.err().contains("an empty vocabulary (--vocab [] on the command line)"), empty.err());

        CliRun infinite = run("preprocess", "--input", atlas.toString(), "--output", dir.resolve("p.h5ad").toString(),
                "--target-sum", "Infinity");
        assertEquals(1, infinite.status());
        assertTrue(infinite.err().contains("needs a positive, finite sum such as 10000 (--target-sum on the command line), got Infinity"),
                infinite.err());
        assertTrue(Files.notExists(shards) && Files.notExists(dir.resolve("p.h5ad")));

        // an obs index one name short (h5py), which shard once filled with invented ids, exit 0
        assertEquals("ok", PythonPeer.run("""
                import sys, h5py
                with h5py.File(sys.argv[1], 'r+') as f:
                    index = f['obs'].attrs['_index']
                    names = f['obs'][index][:-1]
                    del f['obs'][index]
                    f['obs'].create_dataset(index, data=names)
                print('ok')
                """, atlas));
        CliRun shortObs = run("shard", atlas.toString(), "--output-dir", shards.toString());
        assertEquals(1, shortObs.status());
        assertTrue(shortObs.err().contains("of n_obs = 60 entries (one per cell, row of X), found 59 entries"), shortObs.err());
        assertTrue(Files.notExists(shards), "no shard folder left");
    }

    @Test
    void inspectSumsInfinitiesAsNumpy(@TempDir Path dir) throws Exception {
        // one +inf in float32 data: numpy's float64 sum is inf (a compensated sum once made it NaN, exit 0)
        String[] expected = PythonPeer.run("""
                import sys, os, numpy as np
                a = np.ones((3, 4), np.float32); a[1, 1] = np.inf
                b = a.copy(); b[1, 1] = -np.inf
                c = a.copy(); c[2, 2] = -np.inf
                for name, x in (('inf', a), ('neginf', b), ('both', c)):
                    np.save(os.path.join(sys.argv[1], name + '.npy'), x)
                print(*(repr(float(x.sum(dtype=np.float64))) for x in (a, b, c)))
                """, dir).split(" ");
        assertEquals("inf", expected[0]);
        assertEquals(Double.POSITIVE_INFINITY, inspectedSum(dir.resolve("inf.npy")));
        assertEquals(Double.NEGATIVE_INFINITY, inspectedSum(dir.resolve("neginf.npy")));
        assertTrue(Double.isNaN(inspectedSum(dir.resolve("both.npy"))), "inf + -inf is NaN, as numpy says " + expected[2]);
    }

    @Test
    void preprocessSaysWhyItKeptMoreGenesAndRefusesAFileWithoutVariableGenes(@TempDir Path dir) {
        Path input = dir.resolve("constant-genes.h5ad");
        Path flat = dir.resolve("flat.h5ad");
        PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(3)
                x = rng.poisson(3, (60, 12)).astype(np.float32)
                x[:, 6:] = 0                     # six genes never seen: no variance, no normalized dispersion
                names = lambda n, p: pd.DataFrame(index=[p + str(i) for i in range(n)])
                ad.AnnData(sp.csr_matrix(x), obs=names(60, 'c'), var=names(12, 'g')).write_h5ad(sys.argv[1])
                ad.AnnData(sp.csr_matrix(np.zeros((60, 12), np.float32)), obs=names(60, 'c'),
                           var=names(12, 'g')).write_h5ad(sys.argv[2])
                """, input, flat);
        CliRun more = run("preprocess", "--input", input.toString(), "--output", dir.resolve("p.h5ad").toString(), "--hvg", "5");
        assertEquals(0, more.status(), more.err());
        // scanpy counts NaN as 0: with the 5th largest of the six defined ones below 0, the six unseen genes come too
        assertTrue(more.out().contains("6 genes have no normalized dispersion (NaN"), more.out());
        assertTrue(!more.out().contains("tie at"), more.out());

        CliRun none = run("preprocess", "--input", flat.toString(), "--output", dir.resolve("q.h5ad").toString(), "--hvg", "3");
        assertEquals(1, none.status());
        assertTrue(none.err().contains("no highly variable gene: no gene of the 12 has a normalized dispersion"), none.err());
        assertTrue(Files.notExists(dir.resolve("q.h5ad")), "no output without genes");
    }

    @Test
    void inspectRefusesToSumAShardFolderWhoseBytesFailTheirChecksums(@TempDir Path dir) throws Exception {
        Path atlas = dir.resolve("atlas.h5ad");
        assertEquals(0, run("generate", "atlas", "--cells", "60", "--genes", "20", "--seed", "2", "-o", atlas.toString()).status());
        Path shards = dir.resolve("shards");
        assertEquals(0, run("shard", atlas.toString(), "--output-dir", shards.toString(), "--shard-size", "25").status());
        double intact = inspectedSum(shards);
        // one stored value changed in place, as a disk or a stray script would: the size and the format still hold
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np
                a = np.load(sys.argv[1], mmap_mode='r+'); a[3] += 1000; a.flush(); print('ok')
                """, shards.resolve("shard_000001.data.npy")));
        CliRun damaged = run("inspect", shards.toString(), "--json");
        assertEquals(1, damaged.status(), "a sum of damaged shards: " + damaged.out());
        assertTrue(damaged.err().contains("shard_000001.data.npy") && damaged.err().contains("CRC32C"), damaged.err());
        assertTrue(intact > 0);
    }
}
