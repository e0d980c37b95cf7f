package dev.memfit.shard;

import ai.djl.ndarray.types.Shape;
import blue.strategic.parquet.ParquetReader;
import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.MemfitException;
import dev.memfit.source.NpySource;
import dev.memfit.source.SampleSource;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Random access across all shards of a folder, memory-mapped: cell {@code i} of the store is row {@code i - start}
 * of the shard whose range holds it. Opening checks the metadata against the files (existence, shapes); a full
 * check with checksums is {@link #validate(Path)}.
 */
public final class ShardStore implements SampleSource {

    private final Path folder;
    private final List<NpySource> shards;
    private final List<Path> shardFiles;
    private final long[] starts;
    private final long cells;
    private final GeneVocabulary vocabulary;

    private ShardStore(Path folder, List<NpySource> shards, List<Path> shardFiles, long[] starts, long cells,
                       GeneVocabulary vocabulary) {
        this.folder = folder;
        this.shards = shards;
        this.shardFiles = shardFiles;
        this.starts = starts;
        this.cells = cells;
        this.vocabulary = vocabulary;
    }

    /**
     * Checks a shard folder completely: metadata, every shard's presence, shape and CRC32C, and every cell table's
     * row count.
     *
     * @param folder the folder
     * @throws MemfitException naming the first problem: the file, what was expected and what was found
     */
    public static void validate(Path folder) {
        JsonNode metadata = metadata(folder);
        long genes = metadata.path("vocabulary").size();
        long total = 0;
        for (JsonNode shard : metadata.path("shards")) {
            Path npy = folder.resolve(shard.path("file").asText());
            NpyHeader header = checkShard(folder, shard, genes);
            long crc = ShardWriter.checksum(npy);
            if (crc != shard.path("crc32c").asLong()) {
                throw new InvalidFileException(npy, header.dataOffset(), "CRC32C " + Long.toHexString(shard.path("crc32c").asLong())
                        + " as " + ShardWriter.METADATA + " records", "CRC32C " + Long.toHexString(crc) + " (corrupt or replaced)");
            }
            Path parquet = folder.resolve(shard.path("metadata").asText());
            long rows;
            try (var stream = ParquetReader.streamContentToStrings(parquet.toFile())) {
                rows = stream.count();
            } catch (IOException | RuntimeException e) {
                throw new InvalidFileException(parquet, -1, "a Parquet table of cell metadata", "an unreadable file: " + e.getMessage(), e);
            }
            if (rows != shard.path("cells").asLong()) {
                throw new InvalidFileException(parquet, -1, shard.path("cells").asLong() + " rows of cell metadata", rows + " rows");
            }
            total += shard.path("cells").asLong();
        }
        if (total != metadata.path("cells").asLong()) {
            throw new InvalidFileException(folder.resolve(ShardWriter.METADATA), -1, metadata.path("cells").asLong()
                    + " cells in the shards", total + " (shards missing from the list?)");
        }
    }

    private static JsonNode metadata(Path folder) {
        Path file = folder.resolve(ShardWriter.METADATA);
        if (!Files.exists(file)) {
            throw new MemfitException(folder + ": expected a shard folder with " + ShardWriter.METADATA + ", found none");
        }
        JsonNode metadata;
        try {
            metadata = ShardWriter.JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new InvalidFileException(file, -1, "JSON shard metadata", "text that does not parse: " + e.getMessage(), e);
        }
        if (!metadata.path("complete").asBoolean(false)) {
            throw new InvalidFileException(file, -1, "a complete shard set", "an interrupted conversion ("
                    + metadata.path("shards").size() + " shards done): run memfit shard again to resume");
        }
        return metadata;
    }

    private static NpyHeader checkShard(Path folder, JsonNode shard, long genes) {
        Path npy = folder.resolve(shard.path("file").asText());
        if (!Files.exists(npy)) {
            throw new MemfitException(npy + ": expected the shard listed in " + ShardWriter.METADATA + ", found no file");
        }
        NpyHeader header = Npy.readHeader(npy);
        long[] expected = {shard.path("cells").asLong(), genes};
        if (!Arrays.equals(header.shape(), expected) || header.dtype() != DType.FLOAT32) {
            throw new InvalidFileException(npy, -1, "f4 " + Arrays.toString(expected) + " as the metadata says",
                    header.dtype().numpyCode() + " " + Arrays.toString(header.shape()));
        }
        return header;
    }

    /**
     * Opens a folder: checks metadata, presence and shapes (not checksums) and maps every shard.
     *
     * @param folder the folder
     * @return the store, to be closed
     */
    public static ShardStore open(Path folder) {
        JsonNode metadata = metadata(folder);
        long genes = metadata.path("vocabulary").size();
        List<NpySource> shards = new ArrayList<>();
        List<Path> files = new ArrayList<>();
        List<Long> starts = new ArrayList<>();
        long total = 0;
        try {
            for (JsonNode shard : metadata.path("shards")) {
                checkShard(folder, shard, genes);
                starts.add(total);
                files.add(folder.resolve(shard.path("file").asText()));
                shards.add(NpySource.mapped(files.getLast()));
                total += shard.path("cells").asLong();
            }
        } catch (RuntimeException e) {
            shards.forEach(NpySource::close);
            throw e;
        }
        List<String> names = new ArrayList<>();
        metadata.path("vocabulary").forEach(name -> names.add(name.asText()));
        return new ShardStore(folder, shards, List.copyOf(files), starts.stream().mapToLong(Long::longValue).toArray(),
                total, new GeneVocabulary(names));
    }

    /**
     * The shard {@code .npy} files, in order.
     *
     * @return the files
     */
    public List<Path> shardFiles() {
        return shardFiles;
    }

    /**
     * The genes of every cell, in column order.
     *
     * @return the vocabulary
     */
    public GeneVocabulary vocabulary() {
        return vocabulary;
    }

    /**
     * Cells per shard, in order (for a distributed shard sampler).
     *
     * @return sizes
     */
    public long[] shardSizes() {
        return shards.stream().mapToLong(NpySource::size).toArray();
    }

    @Override
    public long size() {
        return cells;
    }

    @Override
    public Shape sampleShape() {
        return new Shape(vocabulary.genes().size());
    }

    @Override
    public DType dtype() {
        return DType.FLOAT32;
    }

    @Override
    public void readBatch(long[] indices, MemorySegment into) {
        long rowBytes = sampleBytes();
        for (int i = 0; i < indices.length; i++) {
            int shard = shardOf(indices[i]);
            // straight from the shard's mapping: one copy per row, no slice or view per row
            shards.get(shard).array().copyRows(indices[i] - starts[shard], 1, into, i * rowBytes);
        }
    }

    @Override
    public void read(long index, MemorySegment into) {
        int shard = shardOf(index);
        shards.get(shard).read(index - starts[shard], into);
    }

    private int shardOf(long index) {
        if (index < 0 || index >= cells) {
            throw new IndexOutOfBoundsException("cell " + index + " outside [0, " + cells + ") of " + folder);
        }
        int shard = Arrays.binarySearch(starts, index);
        return shard >= 0 ? shard : -shard - 2;
    }

    @Override
    public String describe() {
        return shards.size() + " shards in " + folder.getFileName();
    }

    @Override
    public void close() {
        shards.forEach(NpySource::close);
    }
}
