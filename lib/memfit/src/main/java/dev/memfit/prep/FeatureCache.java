package dev.memfit.prep;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.io.storage.TempFiles;
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
 * item) and {@code NAME.manifest.json} (shape, the parameters and their SHA-256, the items' fingerprint
 * ({@link Loader#fingerprint()}), a CRC32C of the data).
 *
 * <p>A cache is used only when its manifest parses, its parameters hash matches, its items are the same data (a file
 * of the same shape with other values is not), its file has the recorded shape
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
     * The outcome of {@link Builder#getOrBuild()}.
     *
     * @param features the {@code .npy} of features, valid
     * @param status hit, built or rebuilt
     * @param reason why it was (re)built, empty on a hit
     * @param seconds the time taken, checking included
     */
    public record Result(Path features, Status status, String reason, double seconds) {
    }

    /**
     * Starts configuring a cache: {@code setDirectory}, {@code setName}, {@code setParameters}, {@code setItems}
     * and {@code setExtractor} are required; progress goes to the console by default.
     *
     * <pre>{@code
     * FeatureCache.Result result = FeatureCache.builder().setDirectory(work).setName("embeddings")
     *         .setParameters(embedder.parameters()).setItems(loader).setExtractor(embedder).getOrBuild();
     * }</pre>
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures one cache; {@link #getOrBuild()} and {@link #validate()} check the settings first. */
    public static final class Builder {

        private Path directory;
        private String name;
        private Map<String, ?> parameters;
        private Loader items;
        private Extractor extractor;
        private ProgressListener progress = ProgressListener.console();

        private Builder() {
        }

        /**
         * Sets where the cache lives (required; created if needed).
         *
         * @param folder the folder
         * @return this builder
         */
        public Builder setDirectory(Path folder) {
            this.directory = folder;
            return this;
        }

        /**
         * Sets the cache's name, the stem of {@code NAME.npy} and {@code NAME.manifest.json} (required).
         *
         * @param stem a file name without a folder
         * @return this builder
         */
        public Builder setName(String stem) {
            this.name = stem;
            return this;
        }

        /**
         * Sets everything the features depend on (required): model, weights version, preprocessing... Any change
         * invalidates the cache. Values must be JSON-serializable.
         *
         * @param values the parameters, possibly empty
         * @return this builder
         */
        public Builder setParameters(Map<String, ?> values) {
            this.parameters = values;
            return this;
        }

        /**
         * Sets a loader over the items (required), in any order: rows are written by item index.
         *
         * @param loader the loader; not closed
         * @return this builder
         */
        public Builder setItems(Loader loader) {
            this.items = loader;
            return this;
        }

        /**
         * Sets what computes the features, batch by batch (required).
         *
         * @param features the extractor
         * @return this builder
         */
        public Builder setExtractor(Extractor features) {
            this.extractor = features;
            return this;
        }

        /**
         * Sets where the progress of a build goes (default {@link ProgressListener#console()}), in batches.
         *
         * @param listener the listener, such as {@link ProgressListener#silent()}
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
            return this;
        }

        /**
         * Returns valid cached features, building or rebuilding them when needed.
         *
         * @return where the features are and how they were obtained
         * @throws MemfitException naming the setting to change
         */
        public Result getOrBuild() {
            check();
            long start = System.nanoTime();
            Path data = directory.resolve(name + ".npy");
            Path manifest = directory.resolve(name + ".manifest.json");
            String problem = FeatureCache.check(data, manifest, parameters, items, extractor.featureShape());
            if (problem == null) {
                return new Result(data, Status.HIT, "", (System.nanoTime() - start) / 1e9);
            }
            // one builder per cache entry: a second process fails at once instead of writing the same file
            try (OutputLock lock = OutputLock.acquire(data)) {
                TempFiles.removeStale(lock.target().getParent(), manifest.getFileName().toString());
                boolean existed = Files.exists(manifest) || Files.exists(data);
                build(directory, name, data, manifest, parameters, items, extractor, progress);
                return new Result(data, existed ? Status.REBUILT : Status.BUILT, problem, (System.nanoTime() - start) / 1e9);
            }
        }

        /**
         * Checks the cache without building it: whether {@link #getOrBuild()} would find it valid for these items
         * and this extractor's feature shape.
         *
         * @return null when valid, else why not
         * @throws MemfitException naming the setting to change
         */
        public String validate() {
            check();
            return FeatureCache.check(directory.resolve(name + ".npy"), directory.resolve(name + ".manifest.json"),
                    parameters, items, extractor.featureShape());
        }

        private void check() {
            if (directory == null) {
                throw new MemfitException("setDirectory(folder) is required: where the cache lives");
            }
            if (name == null || name.isBlank() || name.contains("/") || name.contains(java.io.File.separator)) {
                throw new MemfitException("setName(stem) is required: a file name without a folder, such as "
                        + "\"embeddings\", got " + (name == null ? "none" : "\"" + name + "\""));
            }
            if (parameters == null) {
                throw new MemfitException("setParameters(map) is required: everything the features depend on "
                        + "(Map.of() when nothing does)");
            }
            if (items == null) {
                throw new MemfitException("setItems(loader) is required: a loader over the items to compute features of");
            }
            if (extractor == null) {
                throw new MemfitException("setExtractor(extractor) is required: what computes the features");
            }
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
        }
    }

    private static String check(Path data, Path manifest, Map<String, ?> parameters, Loader loader, long[] featureShape) {
        long items = loader.samples();
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
        // the same parameters over other items of the same count are other features
        if (!recorded.has("items")) {
            return "the manifest " + manifest.getFileName() + " does not record which items it was built from (an earlier version wrote it)";
        }
        if (!recorded.path("items").asText().equals(loader.fingerprint())) {
            return "the items changed (recorded " + recorded.path("items").asText() + ", now " + loader.fingerprint() + ")";
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
                              Loader items, Extractor extractor, ProgressListener listener) {
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
             ProgressListener.Task progress = listener.start("Features " + name, items.batchesPerEpoch(), "batches")) {
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
            record.put("items", items.fingerprint());
            record.set("shape", JSON.valueToTree(shape));
            record.put("dtype", "float32");
            record.put("data_file", data.getFileName().toString());
            record.put("crc32c", crc32c(written.data()));
            record.put("build_seconds", (System.nanoTime() - started) / 1e9);
            record.put("created", Instant.now().toString());
            Path temporary = TempFiles.beside(manifest);
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
