package dev.memfit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.Float64Atlas;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The commands on a float64 {@code .h5ad} (FPKM values spanning many magnitudes): inspect sums the float64 values of
 * the file and of its shards (a float32 round trip would be off by about 1e-8 of the sum), shard keeps float64 unless
 * {@code --dtype float32} asks for a cast, which it says, and validate and preprocess say the type.
 */
class Float64CommandsTest {

    @Test
    void inspectShardValidateAndPreprocessKeepFloat64(@TempDir Path dir) throws Exception {
        Path file = Float64Atlas.write(dir.resolve("fpkm.h5ad"), 5, "csr");
        String[] sums = PythonPeer.run("""
                import sys, math, numpy as np, anndata as ad
                x = ad.read_h5ad(sys.argv[1]).X
                print(repr(math.fsum(x.data)), repr(math.fsum(x.data.astype(np.float32).astype(np.float64))))
                """, file).split(" ");
        double exact = Double.parseDouble(sums[0]);
        double asFloat32 = Double.parseDouble(sums[1]);
        assertTrue(Math.abs(exact - asFloat32) > 1e-9 * exact, "the file's values round in float32: " + exact + " vs " + asFloat32);
        ObjectMapper json = new ObjectMapper();

        CliRun inspect = CliRun.of("inspect", file.toString(), "--json");
        assertEquals(0, inspect.status(), inspect.err());
        JsonNode h5ad = json.readTree(inspect.out());
        assertEquals("float64", h5ad.get("dtype").asText());
        assertEquals(exact, h5ad.get("sum").asDouble(), 1e-13 * exact);

        Path shards = dir.resolve("shards");
        CliRun shard = CliRun.of("shard", file.toString(), "--output-dir", shards.toString(), "--shard-size", "150");
        assertEquals(0, shard.status(), shard.err());
        assertTrue(shard.out().contains("float64 values"), shard.out());
        assertFalse(shard.out().contains("cast"), shard.out());
        JsonNode folder = json.readTree(CliRun.of("inspect", shards.toString(), "--json").out());
        assertEquals("float64", folder.get("dtype").asText());
        assertEquals(exact, folder.get("sum").asDouble(), 1e-13 * exact);
        CliRun valid = CliRun.of("validate", shards.toString());
        assertEquals(0, valid.status(), valid.err());
        assertTrue(valid.out().contains(", float64, "), valid.out());

        Path cast = dir.resolve("cast");
        CliRun narrow = CliRun.of("shard", file.toString(), "--output-dir", cast.toString(), "--shard-size", "150",
                "--dtype", "float32");
        assertEquals(0, narrow.status(), narrow.err());
        assertTrue(narrow.out().contains("values cast from float64 to float32"), narrow.out());
        JsonNode casted = json.readTree(CliRun.of("inspect", cast.toString(), "--json").out());
        assertEquals("float32 (cast from float64)", casted.get("dtype").asText());
        assertEquals(asFloat32, casted.get("sum").asDouble(), 1e-13 * asFloat32);
        assertTrue(CliRun.of("validate", cast.toString()).out().contains("float32 (cast from float64)"));

        CliRun wrong = CliRun.of("shard", file.toString(), "--output-dir", dir.resolve("x").toString(), "--dtype", "int8");
        assertEquals(1, wrong.status());
        assertTrue(wrong.err().contains("--dtype: expected float32 or float64, found 'int8'"), wrong.err());

        CliRun preprocess = CliRun.of("preprocess", "--input", file.toString(), "--output", dir.resolve("hvg.h5ad").toString(),
                "--hvg", "50");
        assertEquals(0, preprocess.status(), preprocess.err());
        assertTrue(preprocess.out().contains("log1p, float64"), preprocess.out());
        assertEquals("float64", json.readTree(CliRun.of("inspect", dir.resolve("hvg.h5ad").toString(), "--json").out())
                .get("dtype").asText());
        CliRun help = CliRun.of("preprocess", "--help");
        assertTrue(help.out().contains("tie"), help.out());
    }
}
