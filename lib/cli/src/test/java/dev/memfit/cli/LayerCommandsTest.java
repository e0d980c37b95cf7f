package dev.memfit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code --layer} on inspect, shard and preprocess, on anndata's own archive file (X, raw/X and two layers). */
class LayerCommandsTest {

    private static final Path ARCHIVE = Path.of("/usr/lib/python3/dist-packages/anndata/tests/data/archives/v0.7.8/adata.h5ad");

    @Test
    void inspectShardAndPreprocessTakeRawX(@TempDir Path dir) throws Exception {
        String[] reference = PythonPeer.run("""
                import sys, anndata as ad
                a = ad.read_h5ad(sys.argv[1])
                print(a.raw.X.shape[1], repr(float(a.raw.X.astype('float64').sum())), ','.join(a.raw.var_names[:3]))
                """, ARCHIVE).split(" ");
        CliRun inspect = CliRun.of("inspect", ARCHIVE.toString(), "--layer", "raw/X", "--json");
        assertEquals(0, inspect.status(), inspect.err());
        JsonNode facts = new ObjectMapper().readTree(inspect.out());
        assertEquals(Long.parseLong(reference[0]), facts.get("n_vars").asLong());
        assertEquals(Double.parseDouble(reference[1]), facts.get("sum").asDouble(), 1e-9);

        Path shards = dir.resolve("shards");
        CliRun shard = CliRun.of("shard", ARCHIVE.toString(), "--output-dir", shards.toString(), "--shard-size", "7",
                "--layer", "raw");
        assertEquals(0, shard.status(), shard.err());
        CliRun sharded = CliRun.of("inspect", shards.toString(), "--json");
        assertEquals(0, sharded.status(), sharded.err());
        JsonNode shardFacts = new ObjectMapper().readTree(sharded.out());
        assertEquals(Double.parseDouble(reference[1]), shardFacts.get("sum").asDouble(), 1e-9);
        assertEquals(Long.parseLong(reference[0]), shardFacts.get("genes").asLong(), shardFacts.toString());

        Path processed = dir.resolve("hvg.h5ad");
        CliRun preprocess = CliRun.of("preprocess", "--input", ARCHIVE.toString(), "--output", processed.toString(),
                "--hvg", "10", "--layer", "raw/X");
        assertEquals(0, preprocess.status(), preprocess.err());
        assertTrue(preprocess.out().contains("(of " + reference[0] + ")"), preprocess.out());
        CliRun missing = CliRun.of("shard", ARCHIVE.toString(), "--output-dir", dir.resolve("none").toString(),
                "--layer", "spliced");
        assertEquals(1, missing.status());
        assertTrue(missing.err().contains("no matrix layers/spliced to read as X; the file has X, raw/X, layers/array, "
                + "layers/sparse"), missing.err());
    }
}
