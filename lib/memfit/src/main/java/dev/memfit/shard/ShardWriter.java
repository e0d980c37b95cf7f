package dev.memfit.shard;

import blue.strategic.parquet.ParquetWriter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.DType;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.npy.NpyWriter;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.Types;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Converts an {@code .h5ad} into a folder of shards, out of core: {@code shard_NNNNNN.npy} (cells x vocabulary
 * genes, float32), {@code shard_NNNNNN.parquet} (the cells' {@code obs} columns) and {@code shard_metadata.json}
 * (vocabulary, cells and CRC32C per shard, and whether the set is complete).
 *
 * <p>Memory is bounded by one chunk of rows, not by the file. Each shard is written under a temporary name and
 * renamed; the metadata is rewritten after each shard, so an interrupted run resumes after the last complete shard
 * (checked by checksum) and never leaves a shard that reads as valid half-written.
 */
public final class ShardWriter {

    /** The metadata file of a shard folder. */
    public static final String METADATA = "shard_metadata.json";
    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final long CHUNK_BYTES = 32L << 20;

    private ShardWriter() {
    }

    /**
     * What a conversion did.
     *
     * @param shards shards in the folder
     * @param written shards written by this call (the rest were already complete)
     * @param cells cells in all shards
     * @param genes vocabulary size
     */
    public record Result(int shards, int written, long cells, int genes) {
    }

    /**
     * Starts configuring a conversion: {@code setInput} is required; defaults are 100,000 cells per shard, the
     * input's own genes as the vocabulary and a console progress bar.
     *
     * <pre>{@code
     * ShardWriter.Result result = ShardWriter.builder().setInput(Path.of("atlas.h5ad")).optShardSize(50_000)
     *         .write(Path.of("shards"));
     * }</pre>
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures a conversion; {@link #write(Path)} validates the settings and converts. */
    public static final class Builder {

        private Path input;
        private long shardSize = 100_000;
        private GeneVocabulary vocabulary;
        private ProgressListener progress = ProgressListener.console();

        private Builder() {
        }

        /**
         * Sets the file to convert (required).
         *
         * @param file an {@code .h5ad}
         * @return this builder
         */
        public Builder setInput(Path file) {
            this.input = file;
            return this;
        }

        /**
         * Sets the number of cells per shard (default 100,000); the last shard holds the rest.
         *
         * @param cells at least 1
         * @return this builder
         */
        public Builder optShardSize(long cells) {
            this.shardSize = cells;
            return this;
        }

        /**
         * Sets the genes of every shard, in order (default: the input's own {@code var}); genes the input lacks are
         * 0, genes outside the vocabulary dropped, so shards of different files agree column by column.
         *
         * @param genes the vocabulary, or null for the input's own genes
         * @return this builder
         */
        public Builder optVocabulary(GeneVocabulary genes) {
            this.vocabulary = genes;
            return this;
        }

        /**
         * Sets where progress goes (default {@link ProgressListener#console()}), in cells.
         *
         * @param listener the listener, such as {@link ProgressListener#silent()}
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
            return this;
        }

        /**
         * Validates the settings and converts the input, resuming after the last complete shard of an earlier
         * run of the same conversion.
         *
         * @param outputDir the shard folder (created if needed)
         * @return what was done
         * @throws MemfitException naming the setting to change
         */
        public Result write(Path outputDir) {
            if (input == null) {
                throw new MemfitException("setInput(file) is required: the .h5ad to convert");
            }
            if (outputDir == null) {
                throw new MemfitException("write(outputDir) needs the folder to write the shards to");
            }
            if (shardSize < 1) {
                throw new MemfitException("shard size must be at least 1 cell, got " + shardSize
                        + "; set optShardSize (--shard-size on the command line)");
            }
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
            return ShardWriter.write(input, outputDir, shardSize, vocabulary, progress);
        }
    }

    private static Result write(Path input, Path outputDir, long shardSize, GeneVocabulary vocabulary,
                                ProgressListener listener) {
        try (H5ad h5ad = H5ad.builder().setFile(input).optProgress(listener).open()) {
            GeneVocabulary genes = vocabulary != null ? vocabulary : GeneVocabulary.fromVar(h5ad);
            int[] positions = genes.positionsOf(h5ad.index("var"));
            long cells = h5ad.observations();
            long shardCount = Math.ceilDiv(cells, shardSize);
            if (shardCount > Integer.MAX_VALUE) {
                throw new MemfitException(cells + " cells in shards of " + shardSize + " would make " + shardCount
                        + " shards; raise optShardSize");
            }
            int shards = (int) shardCount;
            Map<String, Object> obs = h5ad.columns("obs");
            String[] barcodes = h5ad.index("obs");
            Files.createDirectories(outputDir);
            ObjectNode metadata = resumable(outputDir, input, shardSize, genes, cells);
            ArrayNode done = (ArrayNode) metadata.get("shards");
            int written = 0;
            long vocabularySize = genes.genes().size();
            long inputGenes = h5ad.variables();
            int chunk = (int) Math.max(1, CHUNK_BYTES / (Math.max(inputGenes, vocabularySize) * Float.BYTES));
            if (done.size() < shards) {
                h5ad.prepareRows();   // a CSC X is transposed here, its progress bar before the sharding's
            }
            try (Arena arena = Arena.ofConfined();
                 ProgressListener.Task progress = listener.start("Sharding " + input.getFileName(), cells, "cells")) {
                MemorySegment rows = arena.allocate((long) chunk * inputGenes * Float.BYTES);
                MemorySegment projected = arena.allocate((long) chunk * vocabularySize * Float.BYTES);
                progress.step(Math.min(cells, done.size() * shardSize));
                for (int s = done.size(); s < shards; s++) {
                    long first = s * shardSize;
                    long count = Math.min(shardSize, cells - first);
                    String name = String.format("shard_%06d", s);
                    Path npy = outputDir.resolve(name + ".npy");
                    try (NpyWriter writer = Npy.create(npy, NpyHeader.of(DType.FLOAT32, count, vocabularySize))) {
                        for (long row = 0; row < count; row += chunk) {
                            int n = (int) Math.min(chunk, count - row);
                            h5ad.readRows(first + row, n, rows);
                            genes.project(rows, n, positions, projected);
                            writer.writeRows(row, projected.asSlice(0, n * vocabularySize * Float.BYTES));
                            progress.step(n);
                        }
                        writer.commit();
                    }
                    writeParquet(outputDir.resolve(name + ".parquet"), barcodes, obs, first, count);
                    ObjectNode entry = JSON.createObjectNode();
                    entry.put("file", name + ".npy");
                    entry.put("metadata", name + ".parquet");
                    entry.put("cells", count);
                    entry.put("crc32c", checksum(npy));
                    done.add(entry);
                    metadata.put("complete", s == shards - 1);
                    writeAtomically(outputDir.resolve(METADATA), metadata);
                    written++;
                }
                metadata.put("complete", true);
                writeAtomically(outputDir.resolve(METADATA), metadata);
            }
            return new Result(shards, written, cells, genes.genes().size());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write shards to " + outputDir, e);
        }
    }

    /** The metadata to continue from: the existing one when it describes the same conversion, else a fresh one. */
    private static ObjectNode resumable(Path outputDir, Path input, long shardSize, GeneVocabulary genes, long cells) {
        Path file = outputDir.resolve(METADATA);
        if (Files.exists(file)) {
            try {
                JsonNode existing = JSON.readTree(file.toFile());
                boolean same = existing.path("source").asText().equals(input.toAbsolutePath().toString())
                        && existing.path("source_bytes").asLong(-1) == Files.size(input)
                        && existing.path("source_modified").asText().equals(Files.getLastModifiedTime(input).toString())
                        && existing.path("shard_size").asLong() == shardSize && existing.path("cells").asLong() == cells
                        && JSON.convertValue(existing.path("vocabulary"), java.util.List.class).equals(genes.genes());
                if (same && existing instanceof ObjectNode object) {
                    ArrayNode kept = JSON.createArrayNode();
                    for (JsonNode shard : existing.path("shards")) {
                        Path npy = outputDir.resolve(shard.path("file").asText());
                        if (Files.exists(npy) && Files.exists(outputDir.resolve(shard.path("metadata").asText()))
                                && checksum(npy) == shard.path("crc32c").asLong()) {
                            kept.add(shard);
                        } else {
                            break;
                        }
                    }
                    object.set("shards", kept);
                    return object;
                }
            } catch (IOException | RuntimeException e) {
                // An unreadable metadata file describes nothing we can trust: start over.
            }
        }
        ObjectNode metadata = JSON.createObjectNode();
        metadata.put("format_version", 1);
        metadata.put("source", input.toAbsolutePath().toString());
        try {
            // a source rewritten since (same name, new contents) must not resume onto the old shards
            metadata.put("source_bytes", Files.size(input));
            metadata.put("source_modified", Files.getLastModifiedTime(input).toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + input, e);
        }
        metadata.put("cells", cells);
        metadata.put("shard_size", shardSize);
        metadata.put("dtype", "float32");
        metadata.put("complete", false);
        metadata.set("vocabulary", JSON.valueToTree(genes.genes()));
        metadata.set("shards", JSON.createArrayNode());
        return metadata;
    }

    private static void writeParquet(Path target, String[] barcodes, Map<String, Object> obs, long first, long count)
            throws IOException {
        Types.MessageTypeBuilder schema = Types.buildMessage();
        schema.required(PrimitiveType.PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named("cell_id");
        Map<String, Object> columns = new LinkedHashMap<>(obs);
        for (Map.Entry<String, Object> column : columns.entrySet()) {
            if (column.getValue() instanceof double[]) {
                schema.required(PrimitiveType.PrimitiveTypeName.DOUBLE).named(column.getKey());
            } else if (column.getValue() instanceof boolean[]) {
                schema.required(PrimitiveType.PrimitiveTypeName.BOOLEAN).named(column.getKey());
            } else {
                schema.optional(PrimitiveType.PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named(column.getKey());
            }
        }
        MessageType type = schema.named("cells");
        Path temporary = target.resolveSibling("." + target.getFileName() + ".partial");
        Files.deleteIfExists(temporary);
        try (ParquetWriter<Integer> writer = ParquetWriter.writeFile(type, temporary.toFile(), (row, values) -> {
            values.write("cell_id", barcodes.length > row ? barcodes[row] : Integer.toString(row));
            for (Map.Entry<String, Object> column : columns.entrySet()) {
                Object data = column.getValue();
                if (data instanceof double[] numbers) {
                    values.write(column.getKey(), numbers[row]);
                } else if (data instanceof boolean[] flags) {
                    values.write(column.getKey(), flags[row]);
                } else if (data instanceof String[] texts && texts[row] != null) {
                    values.write(column.getKey(), texts[row]);
                }
            }
        })) {
            for (long row = first; row < first + count; row++) {
                writer.write(Math.toIntExact(row));
            }
        }
        AtomicMove.replace(temporary, target);
    }

    static long checksum(Path npy) {
        try (NpyArray array = Npy.map(npy)) {
            CRC32C crc = new CRC32C();
            MemorySegment data = array.data();
            long step = 1L << 30;
            for (long offset = 0; offset < data.byteSize(); offset += step) {
                crc.update(data.asSlice(offset, Math.min(step, data.byteSize() - offset)).asByteBuffer());
            }
            return crc.getValue();
        }
    }

    private static void writeAtomically(Path target, JsonNode content) throws IOException {
        Path temporary = target.resolveSibling("." + target.getFileName() + ".partial");
        Files.writeString(temporary, JSON.writeValueAsString(content));
        AtomicMove.replace(temporary, target);
    }
}
