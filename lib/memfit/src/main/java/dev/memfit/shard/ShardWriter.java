package dev.memfit.shard;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.io.storage.TempFiles;
import dev.memfit.DType;
import dev.memfit.io.anndata.FrameColumn;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.npy.NpyWriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;

/**
 * Converts AnnData (an {@code .h5ad}, a {@code .zarr} folder or {@code .zarr.zip}, local or a store in a bucket) into
 * a folder of shards, out of core: per shard, the cells x vocabulary genes as CSR
 * ({@code shard_NNNNNN.data.npy}, {@code .indices.npy}, {@code .indptr.npy}: see {@link ShardLayout#SPARSE}, the
 * default for a sparse X) or dense ({@code shard_NNNNNN.npy}), plus {@code shard_NNNNNN.parquet} (the
 * cells' {@code obs} columns, each with its type: see {@link CellTable}); and {@code shard_metadata.json} (layout, vocabulary, cells, and every file of every
 * shard with its size and CRC32C, the type of the values, and whether the set is complete).
 *
 * <p>The values keep the source's type: float64 for a float64 X (each value exactly as stored), float32 for float32,
 * float16 and integer X (an integer X holding a value of 2^24 or more, which float32 would round, is refused naming
 * the cell and gene: shard it as float64); {@link Builder#optDType}{@code (DType.FLOAT32)} casts a float64 X to float32, and the
 * metadata records it ({@code "dtype": "float32", "cast_from": "float64"}).
 *
 * <p>Memory is bounded by one chunk of rows, not by the file. Each shard is written under a temporary name and
 * renamed; the metadata is rewritten after each shard, so an interrupted run never leaves a shard that reads as valid
 * half-written.
 *
 * <p>One writer at a time: the folder is locked ({@link OutputLock}, {@code .memfit.lock} inside it) for the whole
 * run, and a second writer fails at once naming the first one's pid. A run into a folder that holds the same
 * conversion checks every listed shard as {@link ShardStore#validate} does and writes again only those that fail
 * (an interrupted run resumes; a damaged shard is repaired, and {@link Result#repaired()} says why); a run of another
 * conversion replaces the set. Either way the shard files the new set does not have and the temporary files of
 * dead runs are removed, so a finished run leaves a folder that validates.
 */
public final class ShardWriter {

    /** The metadata file of a shard folder. */
    public static final String METADATA = "shard_metadata.json";
    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final long CHUNK_BYTES = 32L << 20;
    /** 2: a layout and every file of a shard with its size and CRC32C; 1 (read, not written): dense only. */
    static final int FORMAT_VERSION = 2;

    private ShardWriter() {
    }

    /**
     * What a conversion did.
     *
     * @param shards shards in the folder
     * @param written shards written by this call (the rest were already complete)
     * @param cells cells in all shards
     * @param genes vocabulary size
     * @param layout how the shards store their cells
     * @param repaired the listed shards that failed their check and were written again, each as
     *                 {@code "shard_000003 (shard_000003.parquet: expected 100 rows of cell metadata, found 0 rows)"}
     * @param removed the files removed: shards of an earlier conversion this set does not have (beyond its count, or
     *                of the other layout) and temporary files of runs that died
     * @param foreign files in the folder that are not part of the set and were left alone ({@link ShardStore#validate}
     *                rejects the folder until they are moved out)
     * @param startedOver why the shards of an earlier run in the folder were not kept, such as
     *                {@code "s3://b/atlas.h5ad changed: etag \"a1\", was \"9f\""}; null when there were none, or they
     *                were kept
     * @param dtype the type of the shards' values
     * @param castFrom the inputs' type when the values were cast to a narrower {@code dtype} ({@code FLOAT64}), else
     *                 null
     */
    public record Result(int shards, int written, long cells, int genes, ShardLayout layout, List<String> repaired,
                         List<String> removed, List<String> foreign, String startedOver, DType dtype, DType castFrom) {
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

    /**
     * Configures a conversion ({@link ShardSettings}, progress on the console by default); {@link #write(Path)}
     * validates the settings and converts.
     */
    public static final class Builder extends ShardSettings<Builder> {

        private Builder() {
            super(ProgressListener.console());
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Validates the settings and converts the input, keeping the shards of an earlier run of the same conversion
         * that pass validation and writing the rest.
         *
         * @param outputDir the shard folder (created if needed)
         * @return what was done
         * @throws MemfitException naming the setting to change, or when another process is writing the folder
         */
        public Result write(Path outputDir) {
            if (inputs == null || inputs.isEmpty() || inputs.stream().anyMatch(java.util.Objects::isNull)) {
                throw new MemfitException("setInput(file) is required (or setInputs(files)): the .h5ad or .zarr to convert");
            }
            if (outputDir == null) {
                throw new MemfitException("write(outputDir) needs the folder to write the shards to");
            }
            // the inputs are opened and checked (with every setting) before the folder is touched: a file or
            // settings refused here leave nothing
            ShardPlan plan = planShards();
            return ShardWriter.write(inputs, outputDir, plan, progress);
        }
    }

    private static Result write(List<Path> inputs, Path outputDir, ShardPlan plan, ProgressListener listener) {
        ShardLayout layout = plan.layout();
        long cells = plan.cells();
        int shards = plan.shards();
        try {
            // one writer per folder, taken before anything is written; it also removes dead runs' temporary files
            try (OutputLock lock = OutputLock.acquireFolder(outputDir)) {
                String[] startedOver = new String[1];
                ObjectNode metadata = resumable(outputDir, plan, startedOver);
                ArrayNode listed = (ArrayNode) metadata.get("shards");
                while (listed.size() > shards) {
                    listed.remove(listed.size() - 1);
                }
                // every listed shard checked as validate checks it; a shard validate would reject is written again
                boolean[] good = new boolean[shards];
                List<String> repaired = new ArrayList<>();
                long goodCells = 0;
                for (int s = 0; s < listed.size(); s++) {
                    String problem = problem(outputDir, metadata, listed.get(s), plan.cells(s));
                    good[s] = problem == null;
                    if (good[s]) {
                        goodCells += listed.get(s).path("cells").asLong();
                    } else {
                        repaired.add(shardName(s) + " (" + problem + ")");
                    }
                }
                int toWrite = shards - (int) java.util.stream.IntStream.range(0, shards).filter(s -> good[s]).count();
                List<String> removed = new ArrayList<>();
                if (toWrite > 0 || !metadata.path("complete").asBoolean(false)) {
                    // from here on the folder is being rewritten: it must not read as complete if this run stops
                    metadata.put("complete", false);
                    writeAtomically(outputDir.resolve(METADATA), metadata);
                }
                // shards of another conversion (beyond the new count, or of the other layout) and dead runs' leftovers
                removed.addAll(removeStale(outputDir, shards, layout));
                removed.addAll(lock.removedTemporaries().stream().map(f -> f.getFileName().toString()).sorted().toList());
                int written = 0;
                // an object's name, not its staged copy's ("object")
                String label = inputs.size() == 1 ? plan.sourceName(0).replaceAll(".*/(?=[^/]+$)", "")
                        : inputs.size() + " files";
                ShardPlan.Input open = null;
                try {
                    int firstToWrite = java.util.stream.IntStream.range(0, shards).filter(s -> !good[s]).findFirst().orElse(-1);
                    if (firstToWrite >= 0) {
                        open = plan.open(plan.input(firstToWrite), listener);
                        open.prepare();   // a CSC X is transposed here, its progress bar before the sharding's
                    }
                    try (ProgressListener.Task progress = listener.start("Sharding " + label, cells, "cells")) {
                        progress.step(goodCells);
                        for (int s = 0; s < shards; s++) {
                            if (good[s]) {
                                continue;
                            }
                            if (open == null || open.index() != plan.input(s)) {
                                if (open != null) {
                                    open.close();
                                    open = null;
                                }
                                open = plan.open(plan.input(s), listener);
                            }
                            ObjectNode entry = open.write(s, outputDir, progress).toJson();
                            if (s < listed.size()) {
                                listed.set(s, entry);
                            } else {
                                listed.add(entry);
                            }
                            writeAtomically(outputDir.resolve(METADATA), metadata);
                            written++;
                        }
                    }
                } finally {
                    if (open != null) {
                        open.close();
                    }
                }
                if (!metadata.path("complete").asBoolean(false)) {
                    metadata.put("complete", true);
                    writeAtomically(outputDir.resolve(METADATA), metadata);
                }
                List<String> foreign = ShardStore.unexpectedFiles(outputDir, metadata);
                return new Result(shards, written, cells, plan.vocabulary().genes().size(), layout, List.copyOf(repaired),
                        List.copyOf(removed), foreign, startedOver[0], plan.dtype(), plan.castFrom());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write shards to " + outputDir, e);
        }
    }

    /**
     * Writes one shard of an input into a folder: the one encoding of a shard, for this writer and for engines that
     * write shards in parallel ({@link ShardPlan.Input#write}). The arrays (dense, or CSR) and the cell table are
     * each written under a temporary name and renamed when complete.
     *
     * @return the shard's files with their sizes and CRC32C, as the metadata lists them
     */
    static ShardPlan.WrittenShard writeShard(Path input, Path outputDir, int shard, AnnData h5ad, GeneVocabulary genes,
                                             int[] positions, ShardLayout layout, long first, long count,
                                             Map<String, FrameColumn> obs, String[] barcodes, Buffers buffers,
                                             ProgressListener.Task progress) {
        try {
            String name = shardName(shard);
            List<ShardPlan.ShardFile> files = new ArrayList<>();
            long nnz = -1;
            if (layout == ShardLayout.DENSE) {
                Path npy = writeDense(input, outputDir.resolve(name + ".npy"), h5ad, genes, positions, first, count,
                        buffers, progress);
                files.add(fileEntry("x", npy));
            } else {
                nnz = writeSparse(input, outputDir, name, h5ad, genes, positions, first, count, buffers, progress);
                for (String role : SPARSE_ROLES) {
                    files.add(fileEntry(role, outputDir.resolve(name + "." + role + ".npy")));
                }
            }
            Path parquet = outputDir.resolve(name + ".parquet");
            writeParquet(parquet, barcodes, obs, first, count);
            files.add(fileEntry("metadata", parquet));
            return new ShardPlan.WrittenShard(shard, count, nnz, files);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + shardName(shard) + " to " + outputDir, e);
        }
    }

    private static String shardName(int shard) {
        return String.format("shard_%06d", shard);
    }

    /** A shard's files: {@code shard_NNNNNN.npy}, {@code shard_NNNNNN.<role>.npy}, {@code shard_NNNNNN.parquet}. */
    private static final Pattern SHARD_FILE = Pattern.compile("shard_(\\d{6,})(?:\\.(data|indices|indptr))?\\.(npy|parquet)");

    /**
     * Deletes the shard files a set of {@code shards} shards in {@code layout} does not have: those of an earlier
     * conversion into the same folder with more shards or the other layout. Other files are left alone.
     */
    private static List<String> removeStale(Path folder, int shards, ShardLayout layout) throws IOException {
        List<String> removed = new ArrayList<>();
        try (var files = Files.list(folder)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                Matcher match = SHARD_FILE.matcher(file.getFileName().toString());
                if (!match.matches()) {
                    continue;
                }
                long shard = Long.parseLong(match.group(1));
                boolean parquet = match.group(3).equals("parquet");
                boolean ours = shard < shards && (parquet
                        || (layout == ShardLayout.DENSE) == (match.group(2) == null));
                if (!ours && Files.deleteIfExists(file)) {
                    removed.add(file.getFileName().toString());
                }
            }
        }
        removed.sort(null);
        return removed;
    }

    /**
     * Why a listed shard would fail validation, in a few words naming its file, or null when it passes: the checks
     * of {@link ShardStore#validate}, and that it holds the cells its place in the set calls for.
     */
    private static String problem(Path folder, JsonNode metadata, JsonNode shard, long cells) {
        if (shard.path("cells").asLong(-1) != cells) {
            return METADATA + " lists " + shard.path("cells").asLong(-1) + " cells, expected " + cells;
        }
        try {
            ShardStore.checkShard(folder, metadata, shard);
            return null;
        } catch (MemfitException | UncheckedIOException e) {
            String message = e.getMessage();
            // the folder is named once, in the report's heading: each problem names just the file
            return message.replace(folder.toAbsolutePath() + java.io.File.separator, "")
                    .replace(folder + java.io.File.separator, "");
        }
    }

    /** The files of a sparse shard, {@code shard_NNNNNN.<role>.npy}, in the order they are listed. */
    static final List<String> SPARSE_ROLES = List.of("data", "indices", "indptr");

    /** Integer types whose values float32 cannot all hold exactly. */
    private static final java.util.Set<DType> WIDE_INTEGERS = java.util.EnumSet.of(DType.INT32, DType.UINT32, DType.INT64,
            DType.UINT64);

    /**
     * Refuses a value of an integer X that float32 may have rounded (counts never come near 2^24; other integers
     * can), naming the cell and the gene: a shard must hold what the file holds, or say that it does not.
     */
    private static InvalidFileException inexact(Path input, AnnData h5ad, float value, long cell, String gene) {
        String[] cells = h5ad.index("obs");
        String name = cell < cells.length ? " ('" + cells[(int) cell] + "')" : "";
        return new InvalidFileException(input, -1, "integers float32 holds exactly (below 2^24 = 16,777,216 in "
                + "magnitude) in X (" + h5ad.storedType().name().toLowerCase(java.util.Locale.ROOT) + ")",
                String.format(java.util.Locale.ROOT, "%.0f", value) + " (as float32) at cell " + cell + name + ", gene '"
                + gene + "'; shard with --dtype float64 (optDType(DType.FLOAT64)) to keep every value exactly");
    }

    /** Checks {@code count} float32 values of dense rows of {@code size} genes against {@link Buffers#inexactFrom}. */
    private static void checkExact(Path input, AnnData h5ad, MemorySegment rows, int count, long size, long firstCell,
                                   GeneVocabulary genes, Buffers buffers) {
        if (buffers.inexactFrom == Float.POSITIVE_INFINITY) {
            return;
        }
        for (long i = 0; i < count * size; i++) {
            float value = rows.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            if (Math.abs(value) >= buffers.inexactFrom) {
                throw inexact(input, h5ad, value, firstCell + i / size, genes.genes().get((int) (i % size)));
            }
        }
    }

    /** The conversion's working memory, allocated once: one chunk of input rows and what it becomes. */
    static final class Buffers {
        final long inputGenes;
        final long vocabularySize;
        final int denseRows;
        final MemorySegment rows;
        final MemorySegment projected;
        final long sparseValues;
        final MemorySegment values;
        final MemorySegment columns;
        final long[] rowStarts;
        /** The type of the values read and written. */
        final DType type;
        /**
         * The magnitude from which a float32 value read from a wide integer X (32 or 64 bits) may have been rounded
         * (2^24: float32's 24-bit significand holds every integer below it); infinite where every value is exact.
         */
        final float inexactFrom;
        long[] row;
        double[] rowValues;

        Buffers(Arena arena, AnnData h5ad, long vocabularySize, ShardLayout layout, DType type) {
            this.type = type;
            this.inexactFrom = type == DType.FLOAT32 && WIDE_INTEGERS.contains(h5ad.storedType()) ? 0x1p24f : Float.POSITIVE_INFINITY;
            int valueBytes = type.byteSize();
            this.inputGenes = h5ad.variables();
            this.vocabularySize = vocabularySize;
            this.denseRows = (int) Math.max(1, CHUNK_BYTES / (Math.max(1, Math.max(inputGenes, vocabularySize)) * valueBytes));
            if (h5ad.sparse() && layout == ShardLayout.SPARSE) {
                // stored values of a chunk of CSR rows: a whole row always fits
                this.sparseValues = Math.max(CHUNK_BYTES / (valueBytes + Integer.BYTES), inputGenes);
                this.values = arena.allocate(sparseValues * valueBytes, 8);
                this.columns = arena.allocate(sparseValues * Integer.BYTES);
                this.rowStarts = new long[(int) Math.min(sparseValues, 1 << 16) + 1];
                this.rows = null;
                this.projected = null;
            } else {
                this.sparseValues = 0;
                this.values = null;
                this.columns = null;
                this.rowStarts = null;
                this.rows = arena.allocate((long) denseRows * inputGenes * valueBytes, 8);
                this.projected = arena.allocate((long) denseRows * vocabularySize * valueBytes, 8);
            }
            // one row's (gene, place) pairs and values, for sorting a row whose genes the vocabulary reorders
            this.row = new long[Math.toIntExact(Math.max(inputGenes, vocabularySize))];
            this.rowValues = new double[row.length];
        }
    }

    private static Path writeDense(Path input, Path npy, AnnData h5ad, GeneVocabulary genes, int[] positions, long first,
                                   long count, Buffers buffers, ProgressListener.Task progress) {
        long vocabularySize = buffers.vocabularySize;
        MemorySegment rows = buffers.rows;
        MemorySegment projected = buffers.projected;
        int chunk = buffers.denseRows;
        DType type = buffers.type;
        try (NpyWriter writer = Npy.create(npy, NpyHeader.of(type, count, vocabularySize))) {
            for (long row = 0; row < count; row += chunk) {
                int n = (int) Math.min(chunk, count - row);
                h5ad.readRows(first + row, n, rows, type);
                genes.project(rows, n, positions, projected, type);
                checkExact(input, h5ad, projected, n, vocabularySize, first + row, genes, buffers);
                writer.writeRows(row, projected.asSlice(0, n * vocabularySize * type.byteSize()));
                progress.step(n);
            }
            return writer.commit();
        }
    }
    private static final ValueLayout.OfFloat FLOAT_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble DOUBLE_LE = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * Writes one CSR shard: each stored value of the input goes once into the mapped {@code .data.npy} and
     * {@code .indices.npy}, its gene mapped through the vocabulary (genes outside it dropped). The files are created
     * for the most values the shard can hold (the input's stored values, or every cell x gene of a dense input),
     * extended sparsely so the unused end costs no disk, and cut to the values kept before they are committed.
     */
    private static long writeSparse(Path input, Path outputDir, String name, AnnData h5ad, GeneVocabulary genes,
                                    int[] positions, long first, long count, Buffers buffers, ProgressListener.Task progress) {
        long capacity = h5ad.sparse() ? h5ad.storedValues(first, count) : Math.multiplyExact(count, buffers.vocabularySize);
        DType type = buffers.type;
        boolean wide = type == DType.FLOAT64;
        try (NpyWriter data = Npy.create(outputDir.resolve(name + ".data.npy"), NpyHeader.of(type, capacity));
             NpyWriter indices = Npy.create(outputDir.resolve(name + ".indices.npy"), NpyHeader.of(DType.INT32, capacity));
             NpyWriter indptr = Npy.create(outputDir.resolve(name + ".indptr.npy"), NpyHeader.of(DType.INT64, count + 1))) {
            MemorySegment values = data.data();
            MemorySegment columns = indices.data();
            MemorySegment pointers = indptr.data();
            long nnz = 0;
            pointers.set(LONG_LE, 0, 0L);
            if (h5ad.sparse()) {
                MemorySegment inValues = buffers.values;
                MemorySegment inColumns = buffers.columns;
                long[] rowStarts = buffers.rowStarts;
                for (long done = 0; done < count; ) {
                    int n = (int) Math.min(count - done, rowStarts.length - 1);
                    while (n > 1 && h5ad.storedValues(first + done, n) > buffers.sparseValues) {
                        n = n / 2;
                    }
                    if (n == 1 && h5ad.storedValues(first + done, 1) > buffers.sparseValues) {
                        // only duplicates make a row longer than n_vars; this many is no count matrix
                        throw new InvalidFileException(input, -1, "at most " + buffers.sparseValues
                                + " stored values in a row of X", h5ad.storedValues(first + done, 1) + " in row "
                                + (first + done) + " of " + h5ad.variables() + " genes (a gene stored many times over)");
                    }
                    h5ad.readCsr(first + done, n, inValues, inColumns, rowStarts, type);
                    for (int r = 0; r < n; r++) {
                        long rowStart = nnz;
                        int last = -1;
                        boolean sorted = true;
                        for (long k = rowStarts[r]; k < rowStarts[r + 1]; k++) {
                            int position = positions[inColumns.getAtIndex(ValueLayout.JAVA_INT, k)];
                            if (position >= 0) {
                                if (wide) {
                                    values.set(DOUBLE_LE, nnz * Double.BYTES, inValues.getAtIndex(ValueLayout.JAVA_DOUBLE, k));
                                } else {
                                    float value = inValues.getAtIndex(ValueLayout.JAVA_FLOAT, k);
                                    if (Math.abs(value) >= buffers.inexactFrom) {
                                        throw inexact(input, h5ad, value, first + done + r, genes.genes().get(position));
                                    }
                                    values.set(FLOAT_LE, nnz * Float.BYTES, value);
                                }
                                columns.set(INT_LE, nnz * Integer.BYTES, position);
                                sorted &= position > last;
                                last = position;
                                nnz++;
                            }
                        }
                        if (!sorted) {
                            // unsorted, or a gene stored twice (sorted is strict): sorted unique genes, duplicates summed
                            nnz = canonicalRow(values, columns, rowStart, nnz, buffers);
                        }
                        pointers.set(LONG_LE, (done + r + 1) * Long.BYTES, nnz);
                    }
                    progress.step(n);
                    done += n;
                }
            } else {
                // dense input: keep the non-zero values of the projected rows, already in gene order
                long size = buffers.vocabularySize;
                for (long done = 0; done < count; done += buffers.denseRows) {
                    int n = (int) Math.min(buffers.denseRows, count - done);
                    h5ad.readRows(first + done, n, buffers.rows, type);
                    genes.project(buffers.rows, n, positions, buffers.projected, type);
                    checkExact(input, h5ad, buffers.projected, n, size, first + done, genes, buffers);
                    for (int r = 0; r < n; r++) {
                        for (int g = 0; g < size; g++) {
                            if (wide) {
                                double value = buffers.projected.getAtIndex(ValueLayout.JAVA_DOUBLE, r * size + g);
                                if (value == 0) {
                                    continue;
                                }
                                values.set(DOUBLE_LE, nnz * Double.BYTES, value);
                            } else {
                                float value = buffers.projected.getAtIndex(ValueLayout.JAVA_FLOAT, r * size + g);
                                if (value == 0) {
                                    continue;
                                }
                                values.set(FLOAT_LE, nnz * Float.BYTES, value);
                            }
                            columns.set(INT_LE, nnz * Integer.BYTES, g);
                            nnz++;
                        }
                        pointers.set(LONG_LE, (done + r + 1) * Long.BYTES, nnz);
                    }
                    progress.step(n);
                }
            }
            data.truncate(nnz);
            indices.truncate(nnz);
            data.commit();
            indices.commit();
            indptr.commit();
            return nnz;
        }
    }

    /**
     * Sorts the values {@code [from, to)} of one row by gene (a vocabulary that reorders genes, or a file with
     * unsorted indices) and sums the values of a gene stored more than once (as scipy's {@code sum_duplicates}), in
     * the file's order and in the shards' type (float32 values added in float32, as scipy adds a float32 matrix's), so
     * that a cell reads back as scipy's {@code toarray()} of its row to the last bit. Each (gene, place in the row) is
     * packed in one long, gene in the high half, so the sort is stable.
     *
     * @return the end of the row: {@code to} less the duplicates merged
     */
    private static long canonicalRow(MemorySegment values, MemorySegment columns, long from, long to, Buffers buffers) {
        int n = Math.toIntExact(to - from);
        if (buffers.row.length < n) {
            // only a row storing some gene more than once is longer than the vocabulary and the input
            buffers.row = new long[n];
            buffers.rowValues = new double[n];
        }
        boolean wide = buffers.type == DType.FLOAT64;
        long[] pairs = buffers.row;
        double[] stored = buffers.rowValues;
        for (int i = 0; i < n; i++) {
            long at = from + i;
            pairs[i] = ((long) columns.get(INT_LE, at * Integer.BYTES) << 32) | i;
            stored[i] = wide ? values.get(DOUBLE_LE, at * Double.BYTES) : values.get(FLOAT_LE, at * Float.BYTES);
        }
        Arrays.sort(pairs, 0, n);
        long end = from;
        int last = -1;
        for (int i = 0; i < n; i++) {
            int gene = (int) (pairs[i] >>> 32);
            double value = stored[(int) pairs[i]];
            if (gene == last) {
                if (wide) {
                    values.set(DOUBLE_LE, (end - 1) * Double.BYTES, values.get(DOUBLE_LE, (end - 1) * Double.BYTES) + value);
                } else {
                    values.set(FLOAT_LE, (end - 1) * Float.BYTES, values.get(FLOAT_LE, (end - 1) * Float.BYTES) + (float) value);
                }
            } else {
                columns.set(INT_LE, end * Integer.BYTES, gene);
                if (wide) {
                    values.set(DOUBLE_LE, end * Double.BYTES, value);
                } else {
                    values.set(FLOAT_LE, end * Float.BYTES, (float) value);
                }
                end++;
                last = gene;
            }
        }
        return end;
    }

    /** One file of a shard as the metadata lists it: its role, name, size and CRC32C of all its bytes. */
    private static ShardPlan.ShardFile fileEntry(String role, Path file) throws IOException {
        return new ShardPlan.ShardFile(role, file.getFileName().toString(), Files.size(file), crc32c(file));
    }

    /**
     * The CRC32C of all of a file's bytes, read in blocks of 1 MiB.
     *
     * @param file the file
     * @return the checksum
     */
    static long crc32c(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            CRC32C crc = new CRC32C();
            ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
            long position = 0;
            int n;
            while ((n = channel.read(buffer, position)) > 0) {
                position += n;
                buffer.flip();
                crc.update(buffer);
                buffer.clear();
            }
            return crc.getValue();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /**
     * The metadata to continue from: the existing one when it describes the same conversion (every field of the
     * plan's metadata but the shards and completeness equal; its listed shards still to be checked), else the plan's
     * fresh one listing no shard, and then why in {@code why[0]}.
     */
    private static ObjectNode resumable(Path outputDir, ShardPlan plan, String[] why) {
        Path file = outputDir.resolve(METADATA);
        ObjectNode fresh = plan.freshMetadata();
        if (Files.exists(file)) {
            try {
                JsonNode existing = JSON.readTree(file.toFile());
                List<String> differences = new ArrayList<>();
                for (Map.Entry<String, JsonNode> field : fresh.properties()) {
                    String key = field.getKey();
                    // a folder written before the cast was recorded holds the same float32 values (float64 was
                    // always cast then): it resumes
                    if (key.equals(ShardPlan.CAST_FROM) && existing.get(key) == null) {
                        continue;
                    }
                    // compared as JSON text: a number read back is an int where the plan's is a long
                    if (!key.equals("complete") && !key.equals("shards")
                            && !field.getValue().toString().equals(String.valueOf(existing.get(key)))) {
                        differences.add(difference(key, field.getValue(), existing.get(key), fresh));
                    }
                }
                if (differences.isEmpty() && existing instanceof ObjectNode object && existing.path("shards").isArray()) {
                    // every listed shard is kept here and checked by the caller, which rewrites those that fail
                    return object;
                }
                why[0] = differences.isEmpty() ? "its " + METADATA + " lists no shards" : String.join("; ", differences);
            } catch (IOException | RuntimeException e) {
                // An unreadable metadata file describes nothing we can trust: start over.
                why[0] = "its " + METADATA + " cannot be read";
            }
        }
        return fresh;
    }

    /** One setting or source that differs from the folder's earlier run, in a few words. */
    private static String difference(String key, JsonNode now, JsonNode before, ObjectNode fresh) {
        String was = before == null ? "not recorded" : "was " + before;
        if (key.startsWith("source_")) {
            return fresh.path("source").asText() + " changed: " + key.substring("source_".length()) + " " + now + ", " + was;
        }
        if (key.equals("sources")) {
            return "the input files or their versions changed";
        }
        return key + " " + now + ", " + was;
    }

    private static void writeParquet(Path target, String[] barcodes, Map<String, FrameColumn> obs, long first, long count)
            throws IOException {
        Path temporary = TempFiles.beside(target);
        try {
            CellTable.write(temporary, barcodes, obs, first, count);
            AtomicMove.replace(temporary, target);
        } finally {
            Files.deleteIfExists(temporary);
        }
    }

    /** The CRC32C of a {@code .npy}'s data region, as format version 1 of the metadata records it. */
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

    static void writeAtomically(Path target, JsonNode content) throws IOException {
        Path temporary = TempFiles.beside(target);
        Files.writeString(temporary, JSON.writeValueAsString(content));
        AtomicMove.replace(temporary, target);
    }
}
