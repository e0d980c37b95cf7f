package dev.memfit.io;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.AnnDataTwins;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.anndata.FrameColumn;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.zarr.ZarrAnnData;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The same AnnData written by anndata as {@code .h5ad}, {@code .zarr} and {@code .zarr.zip} ({@link AnnDataTwins}),
 * read through {@link AnnDataFiles}: every matrix ({@code X}, {@code raw/X}, {@code layers/counts}) gives the same
 * rows (float32 and float64), the same CSR values, the same sums bit for bit and the same columns with the same types
 * from the zarr readers as from the {@code .h5ad} one, and the sums are anndata's; {@link Formats} describes them with
 * the same facts; anndata's archive {@code .zarr.zip} files read as their {@code .h5ad} twins; a damaged chunk is
 * named by store and key.
 */
class AnnDataTwinsTest {

    @TempDir
    static Path dir;
    static JsonNode expected;

    @BeforeAll
    static void write() {
        expected = AnnDataTwins.write(dir);
    }

    private static AnnData open(Path file, String layer) {
        return AnnDataFiles.builder().setFile(file).optLayer(layer).optProgress(ProgressListener.silent()).open();
    }

    @Test
    void theOpenerPicksTheReaderFromThePath() {
        try (AnnData h5ad = AnnDataFiles.open(dir.resolve("csr32.h5ad"));
             AnnData folder = AnnDataFiles.open(dir.resolve("csr32.zarr"));
             AnnData zip = AnnDataFiles.open(dir.resolve("csr32.zarr.zip"))) {
            assertInstanceOf(H5ad.class, h5ad);
            assertInstanceOf(ZarrAnnData.class, folder);
            assertInstanceOf(ZarrAnnData.class, zip);
            assertEquals("AnnData .zarr", zip.format());
        }
        assertEquals(Formats.Format.H5AD, Formats.detect(dir.resolve("csr32.h5ad")));
        assertEquals(Formats.Format.ANNDATA_ZARR, Formats.detect(dir.resolve("csr32.zarr")));
        assertEquals(Formats.Format.ANNDATA_ZARR, Formats.detect(dir.resolve("csr32.zarr.zip")));
        assertEquals("AnnData .zarr", Formats.Format.ANNDATA_ZARR.description());
    }

    @Test
    void everyMatrixReadsTheSameFromEachFormat() {
        for (String variant : AnnDataTwins.VARIANTS) {
            JsonNode truth = expected.get(variant);
            for (String layer : List.of("X", "raw/X", "counts")) {
                try (AnnData h5ad = open(dir.resolve(variant + ".h5ad"), layer)) {
                    for (String store : List.of(".zarr", ".zarr.zip")) {
                        try (AnnData zarr = open(dir.resolve(variant + store), layer)) {
                            String what = variant + store + " " + layer;
                            assertSame(h5ad, zarr, what);
                        }
                    }
                    double sum = switch (layer) {
                        case "X" -> truth.get("sum").asDouble();
                        case "raw/X" -> truth.get("raw_sum").asDouble();
                        default -> truth.get("counts_sum").asDouble();
                    };
                    assertEquals(sum, h5ad.sum(), Math.abs(sum) * 1e-12, variant + " " + layer + ": anndata's sum");
                    if (layer.equals("X")) {
                        assertEquals(truth.get("n_obs").asLong(), h5ad.observations());
                        assertEquals(truth.get("n_vars").asLong(), h5ad.variables());
                        assertEquals(truth.get("dtype").asText(), h5ad.storedType().name().toLowerCase());
                        assertEquals(truth.get("nnz").asLong(), h5ad.sparse() ? h5ad.storedValues() : h5ad.totals().nonZeroValues());
                    } else if (layer.equals("raw/X")) {
                        assertEquals(truth.get("raw_vars").asLong(), h5ad.variables());
                    }
                }
            }
        }
    }

    /** Everything an AnnData reader answers, compared between the .h5ad reader and a zarr one. */
    private static void assertSame(AnnData h5ad, AnnData zarr, String what) {
        assertEquals(h5ad.layer(), zarr.layer(), what);
        assertEquals(h5ad.layout(), zarr.layout(), what);
        assertEquals(h5ad.observations(), zarr.observations(), what);
        assertEquals(h5ad.variables(), zarr.variables(), what);
        assertEquals(h5ad.storedType(), zarr.storedType(), what);
        assertEquals(h5ad.floatType(), zarr.floatType(), what);
        assertEquals(h5ad.storedValues(), zarr.storedValues(), what);
        assertEquals(h5ad.matrices(), zarr.matrices(), what);
        // sums bit for bit: the same values added in the same order
        assertEquals(h5ad.totals(), zarr.totals(), what);
        assertArrayEquals(h5ad.columnSums(), zarr.columnSums(), what);
        int cells = (int) h5ad.observations();
        int genes = (int) h5ad.variables();
        try (Arena arena = Arena.ofConfined()) {
            for (DType type : List.of(DType.FLOAT32, DType.FLOAT64)) {
                // every row, in runs of odd lengths that start and end anywhere (across zarr chunks)
                for (int first = 0; first < cells; first += 173) {
                    int count = Math.min(173, cells - first);
                    long bytes = (long) count * genes * type.byteSize();
                    MemorySegment a = arena.allocate(bytes);
                    MemorySegment b = arena.allocate(bytes);
                    h5ad.readRows(first, count, a, type);
                    zarr.readRows(first, count, b, type);
                    assertEquals(-1, a.mismatch(b), what + " rows " + first + " as " + type);
                    if (h5ad.sparse()) {
                        long n = h5ad.storedValues(first, count);
                        assertEquals(n, zarr.storedValues(first, count), what);
                        MemorySegment va = arena.allocate(Math.max(1, n * type.byteSize()));
                        MemorySegment vb = arena.allocate(Math.max(1, n * type.byteSize()));
                        MemorySegment ca = arena.allocate(Math.max(1, n * 4));
                        MemorySegment cb = arena.allocate(Math.max(1, n * 4));
                        long[] sa = new long[count + 1];
                        long[] sb = new long[count + 1];
                        assertEquals(n, h5ad.readCsr(first, count, va, ca, sa, type));
                        assertEquals(n, zarr.readCsr(first, count, vb, cb, sb, type));
                        assertArrayEquals(sa, sb, what);
                        assertEquals(-1, va.mismatch(vb), what + " CSR values " + first + " as " + type);
                        assertEquals(-1, ca.mismatch(cb), what + " CSR columns " + first);
                    }
                }
            }
        }
        for (String frame : List.of("obs", "var")) {
            assertEquals(h5ad.indexName(frame), zarr.indexName(frame), what);
            assertArrayEquals(h5ad.index(frame), zarr.index(frame), what + " " + frame + " index");
            assertEquals(h5ad.columnNames(frame), zarr.columnNames(frame), what);
            Map<String, FrameColumn> expected = h5ad.frameColumns(frame);
            Map<String, FrameColumn> found = zarr.frameColumns(frame);
            assertEquals(expected.keySet(), found.keySet(), what);
            for (String name : expected.keySet()) {
                assertColumn(expected.get(name), found.get(name), what + " " + frame + "/" + name);
            }
        }
    }

    /** Two columns of the same kind, type (code width, category type, order) and values. */
    static void assertColumn(FrameColumn expected, FrameColumn found, String what) {
        assertEquals(expected.getClass(), found.getClass(), what);
        assertEquals(expected.typeName(), found.typeName(), what);
        assertTrue(java.util.Objects.deepEquals(expected.labels(), found.labels()), what + " labels");
        switch (expected) {
            case FrameColumn.Numbers numbers -> assertTrue(java.util.Objects.deepEquals(numbers.values(),
                    ((FrameColumn.Numbers) found).values()), what + " values");
            case FrameColumn.Categorical categorical -> {
                FrameColumn.Categorical other = (FrameColumn.Categorical) found;
                assertEquals(categorical.ordered(), other.ordered(), what);
                assertColumn(categorical.codes(), other.codes(), what + " codes");
                assertColumn(categorical.categories(), other.categories(), what + " categories");
            }
            case FrameColumn.Nullable nullable -> {
                FrameColumn.Nullable other = (FrameColumn.Nullable) found;
                assertArrayEquals(nullable.mask(), other.mask(), what + " mask");
                assertColumn(nullable.values(), other.values(), what + " values");
            }
            default -> {
            }
        }
    }

    @Test
    void formatsDescribesBothWithTheSameFacts() {
        for (String variant : AnnDataTwins.VARIANTS) {
            Map<String, Object> h5ad = new HashMap<>(Formats.open(dir.resolve(variant + ".h5ad")).facts());
            for (String store : List.of(".zarr", ".zarr.zip")) {
                Formats.DataFile zarr = Formats.open(dir.resolve(variant + store));
                assertEquals(Formats.Format.ANNDATA_ZARR, zarr.format());
                Map<String, Object> facts = new HashMap<>(zarr.facts());
                assertEquals(((String) h5ad.get("format")).replace(".h5ad", ".zarr"), facts.get("format"), variant + store);
                facts.remove("format");
                Map<String, Object> expectedFacts = new HashMap<>(h5ad);
                expectedFacts.remove("format");
                assertEquals(expectedFacts, facts, variant + store);
                assertEquals(String.join(", ", names(expected.get(variant).get("obs_columns"))), facts.get("obs_columns"));
            }
        }
        assertEquals(folderBytes(dir.resolve("dense.zarr")), Formats.open(dir.resolve("dense.zarr")).bytesOnDisk());
    }

    private static List<String> names(JsonNode list) {
        return java.util.stream.StreamSupport.stream(list.spliterator(), false).map(JsonNode::asText).toList();
    }

    private static long folderBytes(Path folder) {
        try (Stream<Path> files = Files.walk(folder)) {
            long total = 0;
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                total += Files.size(file);
            }
            return total;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void anndatasArchiveZipsReadAsTheirH5adTwins() {
        for (String version : List.of("v0.7.0", "v0.7.8")) {
            Path archive = AnnDataTwins.ARCHIVES.resolve(version);
            for (String layer : List.of("X", "raw/X", "layers/array", "layers/sparse")) {
                try (AnnData h5ad = open(archive.resolve("adata.h5ad"), layer);
                     AnnData zarr = open(archive.resolve("adata.zarr.zip"), layer)) {
                    assertSame(h5ad, zarr, version + " " + layer);
                }
            }
        }
    }

    @Test
    void aDamagedChunkIsNamedByStoreAndKey() throws IOException {
        Path copy = dir.resolve("damaged.zarr");
        try (Stream<Path> files = Files.walk(dir.resolve("csr32.zarr"))) {
            for (Path file : files.toList()) {
                Path target = copy.resolve(dir.resolve("csr32.zarr").relativize(file).toString());
                if (Files.isDirectory(file)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(file, target);
                }
            }
        }
        byte[] chunk = Files.readAllBytes(copy.resolve("X/data/3"));
        for (int i = 16; i < chunk.length; i++) {
            chunk[i] = (byte) (chunk[i] ^ 0x5a);
        }
        Files.write(copy.resolve("X/data/3"), chunk);
        try (AnnData zarr = AnnDataFiles.open(copy)) {
            InvalidFileException e = assertThrows(InvalidFileException.class, zarr::sum);
            assertTrue(e.getMessage().contains("damaged.zarr/X/data/3"), e.getMessage());
        }
        MemfitException missing = assertThrows(MemfitException.class, () -> open(dir.resolve("csr32.zarr"), "spliced"));
        assertTrue(missing.getMessage().contains("no matrix layers/spliced")
                && missing.getMessage().contains("layers/counts"), missing.getMessage());
    }
}
