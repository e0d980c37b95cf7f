package dev.memfit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.AnnDataTwins;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ./memfit inspect}, {@code shard} and {@code preprocess} on AnnData in zarr ({@code .zarr} folders and
 * {@code .zarr.zip}, as anndata's {@code write_zarr} writes them) say and write what they say and write for the same
 * AnnData in an {@code .h5ad}, with anndata's sums, for every layout of X and for {@code --layer}.
 */
class ZarrCommandsTest {

    @TempDir
    static Path dir;
    static JsonNode expected;

    @BeforeAll
    static void write() {
        expected = AnnDataTwins.write(dir);
    }

    private static ObjectNode inspect(Path file, String... options) throws Exception {
        String[] args = Stream.concat(Stream.of("inspect", file.toString(), "--json"), Stream.of(options)).toArray(String[]::new);
        CliRun run = CliRun.of(args);
        assertEquals(0, run.status(), file + ": " + run.err());
        return (ObjectNode) new ObjectMapper().readTree(run.out());
    }

    @Test
    void inspectShowsTheH5adsFactsAndAnndatasSum() throws Exception {
        for (String variant : AnnDataTwins.VARIANTS) {
            for (String layer : List.of("X", "counts")) {
                ObjectNode h5ad = inspect(dir.resolve(variant + ".h5ad"), "--layer", layer);
                double sum = expected.get(variant).get(layer.equals("X") ? "sum" : "counts_sum").asDouble();
                assertEquals(sum, h5ad.get("sum").asDouble(), Math.abs(sum) * 1e-12, variant + " " + layer);
                for (String store : List.of(".zarr", ".zarr.zip")) {
                    ObjectNode zarr = inspect(dir.resolve(variant + store), "--layer", layer);
                    assertTrue(zarr.get("format").asText().startsWith("AnnData .zarr, "), zarr.toString());
                    assertEquals(h5ad.get("format").asText().replace(".h5ad", ".zarr"), zarr.get("format").asText());
                    assertEquals(h5ad.get("sum").asDouble(), zarr.get("sum").asDouble(), 0, variant + store);
                    ObjectNode expectedFacts = h5ad.deepCopy();
                    for (ObjectNode facts : List.of(expectedFacts, zarr)) {
                        facts.remove(List.of("file", "format", "size_on_disk"));
                    }
                    assertEquals(expectedFacts, zarr, variant + store + " " + layer);
                }
            }
        }
        ObjectNode described = inspect(dir.resolve("dense.zarr"));
        assertEquals(expected.get("dense").get("nnz").asLong(), described.get("nnz").asLong(), "count_nonzero");
    }

    private static Map<String, byte[]> shardFiles(Path folder) throws Exception {
        Map<String, byte[]> files = new TreeMap<>();
        try (Stream<Path> list = Files.list(folder)) {
            for (Path file : list.toList()) {
                String name = file.getFileName().toString();
                if (!name.equals("shard_metadata.json") && !name.startsWith(".")) {
                    files.put(name, Files.readAllBytes(file));
                }
            }
        }
        return files;
    }

    @Test
    void shardAndPreprocessWriteWhatTheyWriteFromTheH5ad(@TempDir Path out) throws Exception {
        for (String variant : List.of("csc", "dense")) {
            CliRun h5ad = CliRun.of("shard", dir.resolve(variant + ".h5ad").toString(), "--output-dir",
                    out.resolve(variant + "-h5ad").toString(), "--shard-size", "300");
            assertEquals(0, h5ad.status(), h5ad.err());
            CliRun zarr = CliRun.of("shard", dir.resolve(variant + ".zarr").toString(), "--output-dir",
                    out.resolve(variant + "-zarr").toString(), "--shard-size", "300");
            assertEquals(0, zarr.status(), zarr.err());
            assertEquals(h5ad.out().replaceAll("in \\S+", ""), zarr.out().replaceAll("in \\S+", ""), variant);
            Map<String, byte[]> a = shardFiles(out.resolve(variant + "-h5ad"));
            Map<String, byte[]> b = shardFiles(out.resolve(variant + "-zarr"));
            assertEquals(a.keySet(), b.keySet());
            a.forEach((name, bytes) -> assertArrayEquals(bytes, b.get(name), variant + " " + name));
            CliRun valid = CliRun.of("validate", out.resolve(variant + "-zarr").toString());
            assertEquals(0, valid.status(), valid.err());
        }
        CliRun top = CliRun.of("shard", dir.resolve("csr64.zarr.zip").toString(), "--output-dir",
                out.resolve("top").toString(), "--top-genes", "12");
        assertEquals(0, top.status(), top.err());
        assertTrue(top.out().contains("float64 values"), top.out());

        CliRun h5ad = CliRun.of("preprocess", "--input", dir.resolve("csr64.h5ad").toString(), "--output",
                out.resolve("from-h5ad.h5ad").toString(), "--hvg", "15");
        CliRun zarr = CliRun.of("preprocess", "--input", dir.resolve("csr64.zarr").toString(), "--output",
                out.resolve("from-zarr.h5ad").toString(), "--hvg", "15");
        assertEquals(0, zarr.status(), zarr.err());
        assertEquals(h5ad.out().replace("from-h5ad", "from-zarr"), zarr.out());
        assertTrue(zarr.out().contains("float64"), zarr.out());
        assertArrayEquals(Files.readAllBytes(out.resolve("from-h5ad.h5ad")), Files.readAllBytes(out.resolve("from-zarr.h5ad")));
    }

    @Test
    void aFolderNamedZarrWithoutItsMarkerIsOneLine(@TempDir Path out) throws Exception {
        Path empty = Files.createDirectories(out.resolve("atlas.zarr"));
        CliRun run = CliRun.of("inspect", empty.toString());
        assertEquals(1, run.status());
        assertTrue(run.err().contains("a zarr v2 store (.zgroup at its root)"), run.err());
        assertEquals(1, run.err().strip().lines().count(), run.err());
        CliRun layer = CliRun.of("inspect", dir.resolve("csr32.zarr").toString(), "--layer", "spliced");
        assertEquals(1, layer.status());
        assertTrue(layer.err().contains("no matrix layers/spliced to read as X; the store has X, raw/X, layers/counts"),
                layer.err());
    }
}
