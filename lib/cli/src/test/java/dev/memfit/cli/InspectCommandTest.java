package dev.memfit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.PythonPeer;
import dev.memfit.io.npy.Npy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class InspectCommandTest {

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    @Test
    void reportsWhatNumpyReports(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("x.npy");
        String numpy = PythonPeer.run("""
                import sys, numpy as np
                a = np.asfortranarray(np.random.default_rng(1).integers(0, 1000, (300, 7)).astype('>i8'))
                np.save(sys.argv[1], a)
                print(repr(float(a.sum(dtype=np.float64))))
                """, file);
        CliRun result = run("inspect", file.toString(), "--json");
        assertEquals(0, result.status(), result.err());
        JsonNode json = new ObjectMapper().readTree(result.out());
        assertEquals("[300,7]", json.get("shape").toString());
        assertEquals("int64 (>i8)", json.get("dtype").asText());
        assertEquals("big-endian", json.get("byte_order").asText());
        assertTrue(json.get("memory_order").asText().startsWith("Fortran"));
        assertEquals(Files.size(file), json.get("size_on_disk").asLong());
        assertEquals(Double.parseDouble(numpy), json.get("sum").asDouble(), 0.0);

        CliRun table = run("inspect", file.toString());
        assertTrue(table.out().contains("shape          [300, 7]"), table.out());
    }

    @Test
    void badFileExitsNonZeroWithTheMessage(@TempDir Path dir) throws Exception {
        Path text = dir.resolve("notes.npy");
        Files.writeString(text, "hello world, not numpy");
        CliRun result = run("inspect", text.toString());
        assertEquals(1, result.status());
        assertTrue(result.err().startsWith("memfit inspect: " + text + " at byte 0: expected the .npy magic"), result.err());

        CliRun missing = run("inspect", dir.resolve("missing.npy").toString());
        assertEquals(1, missing.status());
        assertTrue(missing.err().contains("missing.npy: no such file"), missing.err());

        Path csv = dir.resolve("table.csv");
        Files.writeString(csv, "a,b\n");
        CliRun other = run("inspect", csv.toString());
        assertEquals(1, other.status());
        assertTrue(other.err().contains("expected a format memfit reads (.npy, .mrcs"), other.err());
    }

    @Test
    void reportsWhatAnndataReports(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("csr64.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(0)
                dense = ((rng.random((120, 30)) < 0.1) * rng.integers(1, 20, (120, 30))).astype(np.float32)
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T', 'NK'], 120)),
                                    'n_counts': dense.sum(axis=1).astype(np.float64),
                                    'batch': ['b%d' % (i % 3) for i in range(120)]},
                                   index=['cell%d' % i for i in range(120)])
                x = sp.csr_matrix(dense)
                x.indptr = x.indptr.astype(np.int64)
                ad.AnnData(x, obs=obs, var=pd.DataFrame(index=['gene%d' % j for j in range(30)])).write_h5ad(sys.argv[1])
                print('ok')
                """, file));
        CliRun run = run("inspect", file.toString(), "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode json = new ObjectMapper().readTree(run.out());
        assertEquals(120, json.get("n_obs").asLong());
        assertEquals(30, json.get("n_vars").asLong());
        assertEquals("cell_type, n_counts, batch", json.get("obs_columns").asText());
        assertEquals(PythonPeer.run("""
                import sys, anndata as ad
                a = ad.read_h5ad(sys.argv[1])
                print(a.X.nnz, repr(float(a.X.sum(dtype='float64'))))
                """, file), json.get("nnz").asLong() + " " + json.get("sum").asDouble());

        // its sparse shards describe the same cells: nnz and the float64 sum of every densified cell
        Path shards = dir.resolve("shards");
        assertEquals(0, run("shard", file.toString(), "--output-dir", shards.toString(), "--shard-size", "50").status());
        CliRun folder = run("inspect", shards.toString(), "--json");
        assertEquals(0, folder.status(), folder.err());
        JsonNode described = new ObjectMapper().readTree(folder.out());
        assertEquals("sparse (CSR)", described.get("layout").asText());
        assertEquals(json.get("nnz").asLong(), described.get("nnz").asLong());
        assertEquals(json.get("sum").asDouble(), described.get("sum").asDouble(), 1e-9 * json.get("sum").asDouble());
    }

    @Test
    void denseH5adNnzCountsNonZeroValuesAndSumsInFloat64(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("dense64.h5ad");
        String expected = PythonPeer.run("""
                import sys, numpy as np, anndata as ad
                rng = np.random.default_rng(2)
                x = (rng.random((300, 40)) < 0.2) * rng.random((300, 40)) * 100
                ad.AnnData(x, dtype=np.float64).write_h5ad(sys.argv[1], compression='gzip')
                print(np.count_nonzero(x), repr(float(x.sum(dtype=np.float64))))
                """, file);
        CliRun run = run("inspect", file.toString(), "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode json = new ObjectMapper().readTree(run.out());
        assertTrue(json.get("format").asText().endsWith("X dense"), run.out());
        assertEquals(300L * 40, json.get("stored_values").asLong());
        assertEquals(Long.parseLong(expected.split(" ")[0]), json.get("nnz").asLong(), "non-zero values, not n_obs x n_vars");
        double sum = Double.parseDouble(expected.split(" ")[1]);
        // numpy sums pairwise, memfit sequentially: equal to a few roundings of the total
        assertEquals(sum, json.get("sum").asDouble(), Math.abs(sum) * 1e-12);
    }

    @Test
    void validateFailsOnAShardFolderMissingAShard(@TempDir Path dir) throws Exception {
        Path atlas = dir.resolve("atlas.h5ad");
        Path shards = dir.resolve("shards");
        assertEquals(0, run("generate", "atlas", "--cells", "300", "--genes", "40", "--seed", "3", "-o", atlas.toString()).status());
        CliRun shard = run("shard", atlas.toString(), "--output-dir", shards.toString(), "--shard-size", "100");
        assertEquals(0, shard.status(), shard.err());
        assertTrue(shard.out().contains("3 sparse shards"), shard.out());
        assertEquals(0, run("validate", shards.toString()).status());
        Files.delete(shards.resolve("shard_000001.indices.npy"));
        CliRun broken = run("validate", shards.toString());
        assertEquals(1, broken.status());
        assertTrue(broken.err().contains("shard_000001.indices.npy"), broken.err());

        Path dense = dir.resolve("dense");
        CliRun denseShard = run("shard", atlas.toString(), "--output-dir", dense.toString(), "--shard-size", "100",
                "--layout", "dense");
        assertEquals(0, denseShard.status(), denseShard.err());
        assertTrue(denseShard.out().contains("3 dense shards"), denseShard.out());
        assertEquals(List.of(100L, 40L), List.of(Npy.readHeader(dense.resolve("shard_000001.npy")).shape()[0],
                Npy.readHeader(dense.resolve("shard_000001.npy")).shape()[1]));
        CliRun wrong = run("shard", atlas.toString(), "--output-dir", dir.resolve("x").toString(), "--layout", "csc");
        assertEquals(1, wrong.status());
        assertTrue(wrong.err().contains("expected dense or sparse, found 'csc'"), wrong.err());
    }
}
