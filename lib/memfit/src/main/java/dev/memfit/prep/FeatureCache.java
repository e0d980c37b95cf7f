package dev.memfit.prep;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.MemfitException;
import dev.memfit.Progress;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.npy.NpyWriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * Expensive per-item features computed once, in batches, and kept on disk: {@code NAME.npy} (float32, one row per
 * item) and {@code NAME.manifest.json} (shape, the parameters and their SHA-256, a CRC32C of the data).
 *
 * <p>A cache is used only when its manifest parses, its parameters hash matches, its file has the recorded shape
 * and its data has the recorded checksum; otherwise it is rebuilt and the reason reported. The manifest is removed
 * before a build and written (atomically) only after the data file is complete, so an interrupted build never leaves
 * a cache that reads as valid.
 */
public final class FeatureCache {

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);
    private static final int FORMAT_VERSION = 1;

    private FeatureCache() {
    }

    /** Computes the features of a batch of items. */
    public interface Extractor {

        /**
         * The shape of one item's features.
         *
         * @return the dimensions
         */
        long[] featureShape();

        /**
         * Computes features.
         *
         * @param items a batch of items
         * @param features where to write {@code items.size()} rows of float32 features, in batch order
         */
        void extract(Batch items, MemorySegment features);
    }

    /** How a request was served. */
    public enum Status {
        /** A valid cache was found and used. */
        HIT,
        /** There was no cache: it was built. */
        BUILT,
        /** A cache was there but invalid (see the reason): it was rebuilt. */
        REBUILT
    }

    /**
     * The outcome of {@link #getOrBuild}.
     *
     * @param features the {@code .npy} of features, valid
     * @param status hit, built or rebuilt
     * @param reason why it was (re)built, empty on a hit
     * @param seconds the time taken, checking included
     */
    public record Result(Path features, Status status, String reason, double seconds) {
    }

    /**
     * Returns valid cached features, building or rebuilding them when needed.
     *
     * @param directory where the cache lives
     * @param name the cache's name (file stem)
     * @param parameters everything the features depend on (model, weights version, preprocessing...): any change
     *                   invalidates the cache
     * @param items a loader over the items, in any order (rows are written by item index)
     * @param extractor computes features batch by batch
     * @return where the features are and how they were obtained
     */
    public static Result getOrBuild(Path directory, String name, Map<String, ?> parameters, Loader items, Extractor extractor) {
        long start = System.nanoTime();
        Path data = directory.resolve(name + ".npy");
        Path manifest = directory.resolve(name + ".manifest.json");
        String problem = check(data, manifest, parameters, items.samples(), extractor.featureShape());
        if (problem == null) {
            return new Result(data, Status.HIT, "", (System.nanoTime() - start) / 1e9);
        }
        boolean existed = Files.exists(manifest) || Files.exists(data);
        build(directory, name, data, manifest, parameters, items, extractor);
        return new Result(data, existed ? Status.REBUILT : Status.BUILT, problem, (System.nanoTime() - start) / 1e9);
    }

    /**
     * Checks a cache without building it.
     *
     * @param directory where the cache lives
     * @param name its name
     * @param parameters the parameters the features should have been computed with
     * @param items the number of items expected
     * @param featureShape the shape of one item's features
     * @return null when valid, else why not
     */
    public static String validate(Path directory, String name, Map<String, ?> parameters, long items, long[] featureShape) {
        return check(directory.resolve(name + ".npy"), directory.resolve(name + ".manifest.json"), parameters, items, featureShape);
    }

    private static String check(Path data, Path manifest, Map<String, ?> parameters, long items, long[] featureShape) {
        if (!Files.exists(manifest)) {
            return "no cache yet (" + manifest.getFileName() + " is missing)";
        }
        JsonNode recorded;
        try {
            recorded = JSON.readTree(manifest.toFile());
            if (recorded == null || !recorded.has("parameters_sha256") || !recorded.has("crc32c") || !recorded.has("shape")) {
                return "the manifest " + manifest.getFileName() + " is incomplete";
            }
        } catch (IOException e) {
            return "the manifest " + manifest.getFileName() + " does not parse: " + e.getMessage().lines().findFirst().orElse("");
        }
        if (!recorded.path("parameters_sha256").asText().equals(hash(parameters))) {
            return "the parameters changed (recorded " + recorded.path("parameters") + ", now " + canonical(parameters) + ")";
        }
        long[] expected = new long[featureShape.length + 1];
        expected[0] = items;
        System.arraycopy(featureShape, 0, expected, 1, featureShape.length);
        try (NpyArray array = Npy.map(data)) {
            if (!Arrays.equals(array.shape(), expected) || array.dtype() != DType.FLOAT32) {
                return data.getFileName() + " holds " + array.dtype().numpyCode() + " " + Arrays.toString(array.shape())
                        + ", expected f4 " + Arrays.toString(expected);
            }
            long crc = crc32c(array.data());
            if (crc != recorded.path("crc32c").asLong()) {
                return data.getFileName() + " is corrupt: CRC32C " + Long.toHexString(crc) + ", the manifest says "
                        + Long.toHexString(recorded.path("crc32c").asLong());
            }
        } catch (InvalidFileException e) {
            return data.getFileName() + " is damaged: " + e.getMessage();
        } catch (MemfitException e) {
            return data.getFileName() + " is missing";
        }
        return null;
    }

    private static void build(Path directory, String name, Path data, Path manifest, Map<String, ?> parameters,
                              Loader items, Extractor extractor) {
        try {
            Files.createDirectories(directory);
            // Invalidate first: from here until the new manifest is in place, the cache reads as invalid.
            Files.deleteIfExists(manifest);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare " + directory, e);
        }
        long[] featureShape = extractor.featureShape();
        long perItem = Arrays.stream(featureShape).reduce(1, Math::multiplyExact);
        long[] shape = new long[featureShape.length + 1];
        shape[0] = items.samples();
        System.arraycopy(featureShape, 0, shape, 1, featureShape.length);
        long rowBytes = perItem * Float.BYTES;
        long started = System.nanoTime();
        try (NpyWriter writer = Npy.create(data, NpyHeader.of(DType.FLOAT32, shape));
             java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
             Progress progress = Progress.bar("Features " + name, items.batchesPerEpoch(), "batches")) {
            MemorySegment rows = arena.allocate(items.batchSize() * rowBytes, 64);
            for (Batch batch : items.epoch(0)) {
                MemorySegment out = rows.asSlice(0, batch.size() * rowBytes);
                extractor.extract(batch, out);
                long[] indices = batch.indices();
                for (int i = 0; i < indices.length; i++) {
                    writer.writeRows(indices[i], out.asSlice(i * rowBytes, rowBytes));
                }
                progress.step(1);
            }
            writer.commit();
        }
        try (NpyArray written = Npy.map(data)) {
            ObjectNode record = JSON.createObjectNode();
            record.put("format_version", FORMAT_VERSION);
            record.put("name", name);
            record.set("parameters", JSON.valueToTree(new TreeMap<>(parameters)));
            record.put("parameters_sha256", hash(parameters));
            record.set("shape", JSON.valueToTree(shape));
            record.put("dtype", "float32");
            record.put("data_file", data.getFileName().toString());
            record.put("crc32c", crc32c(written.data()));
            record.put("build_seconds", (System.nanoTime() - started) / 1e9);
            record.put("created", Instant.now().toString());
            Path temporary = directory.resolve("." + manifest.getFileName() + ".partial");
            Files.writeString(temporary, JSON.writeValueAsString(record));
            AtomicMove.replace(temporary, manifest);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + manifest, e);
        }
    }

    private static long crc32c(MemorySegment data) {
        CRC32C crc = new CRC32C();
        long chunk = 1L << 30;
        for (long offset = 0; offset < data.byteSize(); offset += chunk) {
            crc.update(data.asSlice(offset, Math.min(chunk, data.byteSize() - offset)).asByteBuffer());
        }
        return crc.getValue();
    }

    private static String canonical(Map<String, ?> parameters) {
        try {
            return JSON.copy().disable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(new TreeMap<>(parameters));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String hash(Map<String, ?> parameters) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            return HexFormat.of().formatHex(digest.digest(canonical(parameters).getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every JVM", e);
        }
    }
}
