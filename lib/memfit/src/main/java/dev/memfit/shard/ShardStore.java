package dev.memfit.shard;

import ai.djl.ndarray.types.Shape;
import blue.strategic.parquet.ParquetReader;
import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.source.SampleSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Random access across all shards of a folder, memory-mapped: cell {@code i} of the store is row {@code i - start}
 * of the shard whose range holds it. Dense shards are copied row by row; sparse (CSR) shards are densified straight
 * into the caller's memory: the row zeroed, then its stored values scattered from the mapped arrays (no copy in
 * between, no garbage per row, safe from several threads).
 *
 * <p>Cells are read in the shards' type ({@link #dtype()}, the metadata's {@code dtype}): float32, or float64 for
 * shards of a float64 source. A loader hands out batches of that type unless told otherwise
 * ({@link dev.memfit.data.LoaderBuilder#optConvertTo}).
 *
 * <p>Opening checks the metadata against the files: presence, types, shapes, and for CSR that each row pointer
 * array runs from 0 up to the number of stored values without decreasing (8 bytes per cell read). Gene indices are
 * checked as they are read (a cheap comparison per value, instead of reading every index file at open); a full
 * check, with checksums and every gene index, is {@link #validate(Path)}.
 */
public final class ShardStore implements SampleSource {

    /** Reads a Parquet row's values and keeps nothing. */
    private static final blue.strategic.parquet.Hydrator<Object, Object, String[]> COUNT_ROWS = new blue.strategic.parquet.Hydrator<>() {
        @Override
        public Object start() {
            return Boolean.TRUE;
        }

        @Override
        public Object add(Object row, String[] heading, Object value) {
            return row;
        }

        @Override
        public Object finish(Object row) {
            return row;
        }
    };

    private static final ValueLayout.OfFloat FLOAT_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble DOUBLE_LE = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Path folder;
    private final ShardLayout layout;
    private final List<NpyArray> arrays;
    private final List<Path> files;
    private final long[] starts;
    private final long[] sizes;
    private final long cells;
    private final int genes;
    private final GeneVocabulary vocabulary;
    /** The type of the values, and its size. */
    private final DType dtype;
    private final int valueBytes;
    /** The source's type when the values were cast to a narrower one, else null. */
    private DType castFrom;
    private long recordedChecksums;
    private final long storedValues;
    private final long storedBytes;
    /** Dense: each shard's cells x genes; null for CSR. */
    private final MemorySegment[] rows;
    /** CSR: each shard's values, gene indices and row pointers, as mapped (little-endian); null for dense. */
    private final MemorySegment[] values;
    private final MemorySegment[] indices;
    private final MemorySegment[] pointers;
    private final Path[] indexFiles;
    private final long[] indexOffsets;
    private ShardStore(Path folder, ShardLayout layout, List<NpyArray> arrays, List<Path> files, long[] sizes,
                       GeneVocabulary vocabulary, DType dtype) {
        this.folder = folder;
        this.layout = layout;
        this.dtype = dtype;
        this.valueBytes = dtype.byteSize();
        this.arrays = arrays;
        this.files = List.copyOf(files);
        this.sizes = sizes;
        this.starts = new long[sizes.length];
        long total = 0;
        for (int s = 0; s < sizes.length; s++) {
            starts[s] = total;
            total += sizes[s];
        }
        this.cells = total;
        this.vocabulary = vocabulary;
        this.genes = vocabulary.genes().size();
        int perShard = layout == ShardLayout.DENSE ? 1 : 3;
        int shards = sizes.length;
        long bytes = 0;
        for (Path file : files) {
            try {
                bytes += Files.size(file);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + file, e);
            }
        }
        this.storedBytes = bytes;
        if (layout == ShardLayout.DENSE) {
            rows = new MemorySegment[shards];
            values = indices = pointers = null;
            indexFiles = null;
            indexOffsets = null;
            for (int s = 0; s < shards; s++) {
                rows[s] = arrays.get(s).data();
            }
            storedValues = cells * genes;
        } else {
            rows = null;
            values = new MemorySegment[shards];
            indices = new MemorySegment[shards];
            pointers = new MemorySegment[shards];
            indexFiles = new Path[shards];
            indexOffsets = new long[shards];
            long nnz = 0;
            for (int s = 0; s < shards; s++) {
                values[s] = arrays.get(perShard * s).data();
                indices[s] = arrays.get(perShard * s + 1).data();
                pointers[s] = arrays.get(perShard * s + 2).data();
                indexFiles[s] = arrays.get(perShard * s + 1).path();
                indexOffsets[s] = arrays.get(perShard * s + 1).header().dataOffset();
                nnz += arrays.get(perShard * s).rows();
            }
            storedValues = nnz;
        }
    }

    /**
     * Checks a shard folder as {@link #validate} does, without what only a writer cares about (files the metadata
     * does not list): every shard file's size, type, shape and CRC32C against {@code shard_metadata.json}. Reads every
     * byte; what must read the values anyway (a sum) does it first, so that damaged bytes are never summed.
     *
     * @param folder the folder
     * @throws MemfitException naming the first file that fails and how
     */
    public static void checkFiles(Path folder) {
        checkFiles(folder, metadata(folder));
    }

    private static void checkFiles(Path folder, JsonNode metadata) {
        for (JsonNode shard : metadata.path("shards")) {
            checkShard(folder, metadata, shard);
        }
    }

    /**
     * Checks a shard folder completely: metadata, every file's presence, size and CRC32C, every array's type and
     * shape, for CSR every row pointer and gene index, every cell table's row count, and that the folder holds no
     * file the metadata does not list (a stale shard of an earlier conversion, a temporary file of an interrupted
     * run, a stray {@code .npy}) but the metadata and a writer's lock file.
     *
     * @param folder the folder
     * @throws MemfitException naming the first problem: the file, what was expected and what was found
     */
    public static void validate(Path folder) {
        JsonNode metadata = metadata(folder);
        checkFiles(folder, metadata);
        List<String> unexpected = unexpectedFiles(folder, metadata);
        if (!unexpected.isEmpty()) {
            throw new MemfitException(folder + ": expected only the files " + ShardWriter.METADATA + " lists, found "
                    + unexpected.size() + " more: " + String.join(", ", unexpected.subList(0, Math.min(10, unexpected.size())))
                    + (unexpected.size() > 10 ? ", ..." : "") + " (stale shards and temporary files: run memfit shard "
                    + "again to remove them; move any other file out of the folder)");
        }
        // and what opening checks across shards (the store's layout and sizes), as a loader will open it
        open(folder).close();
    }

    /**
     * Checks one shard of a folder as {@link #validate} does: its files' presence, size and CRC32C, its arrays'
     * types and shapes, for CSR its row pointers and gene indices, and its cell table's row count.
     *
     * @param folder the shard folder
     * @param metadata the folder's metadata
     * @param shard the shard's entry
     * @throws MemfitException naming the file, what was expected and what was found
     */
    static void checkShard(Path folder, JsonNode metadata, JsonNode shard) {
        long cells = shard.path("cells").asLong();
        long genes = metadata.path("vocabulary").size();
        DType dtype = dtype(metadata, folder.resolve(ShardWriter.METADATA));
        JsonNode listed = shard.path("files");
        if (listed.isArray() && !listed.isEmpty()) {
            for (JsonNode file : listed) {
                Path path = folder.resolve(file.path("file").asText());
                if (!Files.exists(path)) {
                    throw new MemfitException(path + ": expected the shard listed in " + ShardWriter.METADATA
                            + ", found no file");
                }
                long crc = ShardWriter.crc32c(path);
                long bytes = size(path);
                if (bytes != file.path("bytes").asLong() || crc != file.path("crc32c").asLong()) {
                    throw new InvalidFileException(path, -1, file.path("bytes").asLong() + " bytes of CRC32C "
                            + Long.toHexString(file.path("crc32c").asLong()) + " as " + ShardWriter.METADATA + " records",
                            bytes + " bytes of CRC32C " + Long.toHexString(crc) + " (corrupt or replaced)");
                }
            }
            if (ShardLayout.of(metadata.path("layout").asText(ShardLayout.DENSE.key())) == ShardLayout.SPARSE) {
                checkSparse(folder, shard, cells, genes, dtype);
            } else {
                checkArray(folder.resolve(shard.path("file").asText()), dtype, cells, genes);
            }
        } else {
            // format version 1: one dense .npy per shard, the CRC32C of its data region
            Path npy = folder.resolve(shard.path("file").asText());
            NpyHeader header = checkArray(npy, dtype, cells, genes);
            long crc = ShardWriter.checksum(npy);
            if (crc != shard.path("crc32c").asLong()) {
                throw new InvalidFileException(npy, header.dataOffset(), "CRC32C " + Long.toHexString(shard.path("crc32c").asLong())
                        + " as " + ShardWriter.METADATA + " records", "CRC32C " + Long.toHexString(crc) + " (corrupt or replaced)");
            }
        }
        Path parquet = folder.resolve(shard.path("metadata").asText());
        long rows;
        // every value is read (a damaged page fails here), none kept; not as strings: parquet-floor's string reader
        // fails on a null, which a categorical's missing value or a nullable column's is
        try (var stream = ParquetReader.streamContent(parquet.toFile(), COUNT_ROWS)) {
            rows = stream.count();
        } catch (IOException | RuntimeException e) {
            throw new InvalidFileException(parquet, -1, "a Parquet table of cell metadata", "an unreadable file: " + e.getMessage(), e);
        }
        if (rows != cells) {
            throw new InvalidFileException(parquet, -1, cells + " rows of cell metadata", rows + " rows");
        }
    }

    /** A CSR shard's three files and its stored-value count, as the metadata names them. */
    private record SparseFiles(Path data, Path indices, Path indptr, long nnz) {

        /** The files, each checked for its type and shape (values and indices of nnz, row pointers of cells + 1). */
        static SparseFiles checked(Path folder, JsonNode shard, long cells, DType dtype) {
            long nnz = shard.path("nnz").asLong(-1);
            SparseFiles files = new SparseFiles(roleFile(folder, shard, "data"), roleFile(folder, shard, "indices"),
                    roleFile(folder, shard, "indptr"), nnz);
            checkArray(files.data(), dtype, nnz, -1);
            checkArray(files.indices(), DType.INT32, nnz, -1);
            checkArray(files.indptr(), DType.INT64, cells + 1, -1);
            return files;
        }
    }

    /** A CSR shard's arrays: types and shapes, row pointers, and every gene index below the vocabulary's size. */
    private static void checkSparse(Path folder, JsonNode shard, long cells, long genes, DType dtype) {
        SparseFiles sparse = SparseFiles.checked(folder, shard, cells, dtype);
        Path index = sparse.indices();
        try (NpyArray pointers = Npy.map(sparse.indptr()); NpyArray indices = Npy.map(index)) {
            checkPointers(pointers, sparse.nnz());
            MemorySegment values = indices.data();
            MemorySegment rowStarts = pointers.data();
            long n = values.byteSize() / Integer.BYTES;
            long row = 0;
            long rowEnd = cells > 0 ? rowStarts.get(LONG_LE, Long.BYTES) : n;
            int previous = -1;
            for (long k = 0; k < n; k++) {
                while (k >= rowEnd && row + 1 < cells) {
                    row++;
                    rowEnd = rowStarts.get(LONG_LE, (row + 1) * Long.BYTES);
                    previous = -1;
                }
                int gene = values.get(INT_LE, k * Integer.BYTES);
                if (Integer.compareUnsigned(gene, (int) genes) >= 0) {
                    throw new InvalidFileException(index, indices.header().dataOffset() + k * Integer.BYTES,
                            "gene indices in [0, " + genes + ") (the vocabulary)", "index " + gene + " at stored value " + k);
                }
                // readers set, not add, each gene's value: a cell's genes must be unique, as ShardWriter writes them
                if (gene <= previous) {
                    throw new InvalidFileException(index, indices.header().dataOffset() + k * Integer.BYTES,
                            "strictly ascending gene indices within cell " + row + " of the shard",
                            "index " + gene + " after " + previous + " at stored value " + k);
                }
                previous = gene;
            }
        }
    }

    /**
     * The names of the files in a shard folder that its metadata does not list, sorted: neither the metadata, nor a
     * writer's lock file, nor a file of a listed shard.
     *
     * @param folder the shard folder
     * @param metadata its metadata
     * @return the names, empty when the folder holds only the shard set
     */
    static List<String> unexpectedFiles(Path folder, JsonNode metadata) {
        java.util.Set<String> expected = new java.util.HashSet<>(List.of(ShardWriter.METADATA, OutputLock.FOLDER_LOCK));
        for (JsonNode shard : metadata.path("shards")) {
            expected.add(shard.path("metadata").asText());
            if (shard.has("file")) {
                expected.add(shard.path("file").asText());
            }
            for (JsonNode file : shard.path("files")) {
                expected.add(file.path("file").asText());
            }
        }
        List<String> unexpected = new ArrayList<>();
        try (var files = Files.list(folder)) {
            files.map(file -> file.getFileName().toString()).filter(name -> !expected.contains(name)).sorted()
                    .forEach(unexpected::add);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + folder, e);
        }
        return unexpected;
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    private static JsonNode metadata(Path folder) {
        Path file = folder.resolve(ShardWriter.METADATA);
        if (!Files.exists(file)) {
            throw new MemfitException(folder + ": expected a shard folder with " + ShardWriter.METADATA + ", found none");
        }
        return checkedMetadata(file, file);
    }

    /**
     * Reads shard metadata and checks that it describes a complete shard set whose shards add up to its cells.
     *
     * @param file the metadata file (a local copy of an object's, for a shard folder in a bucket)
     * @param shownAs the path errors name
     * @return the metadata
     */
    static JsonNode checkedMetadata(Path file, Path shownAs) {
        JsonNode metadata;
        try {
            metadata = ShardWriter.JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new InvalidFileException(shownAs, -1, "JSON shard metadata", "text that does not parse: " + e.getMessage(), e);
        }
        if (!metadata.path("complete").asBoolean(false)) {
            throw new InvalidFileException(shownAs, -1, "a complete shard set", "an interrupted conversion ("
                    + metadata.path("shards").size() + " shards done): run memfit shard again to resume");
        }
        long total = 0;
        for (JsonNode shard : metadata.path("shards")) {
            total += shard.path("cells").asLong();
        }
        if (total != metadata.path("cells").asLong()) {
            throw new InvalidFileException(shownAs, -1, metadata.path("cells").asLong() + " cells in the shards",
                    total + " (shards missing from the list?)");
        }
        return metadata;
    }

    /**
     * The type of a shard folder's values, from its metadata's {@code dtype} (float32 when absent, as in folders of
     * format version 1).
     *
     * @param metadata the folder's metadata
     * @param shownAs the metadata file, for the message
     * @return {@code FLOAT32} or {@code FLOAT64}
     * @throws InvalidFileException for another type
     */
    static DType dtype(JsonNode metadata, Path shownAs) {
        String name = metadata.path("dtype").asText("float32");
        return switch (name) {
            case "float32" -> DType.FLOAT32;
            case "float64" -> DType.FLOAT64;
            default -> throw new InvalidFileException(shownAs, -1, "dtype float32 or float64", "dtype " + name);
        };
    }

    /**
     * A CRC32C of every CRC32C the metadata records for the shards' files (format 1: for each shard), in order: it
     * changes whenever a value does, without reading the values, so a resumed run or a cache can tell re-written
     * shards of the same sizes apart ({@link dev.memfit.source.SampleSource#content(long)}).
     */
    static long recordedChecksums(JsonNode metadata) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        java.nio.ByteBuffer value = java.nio.ByteBuffer.allocate(Long.BYTES);
        for (JsonNode shard : metadata.path("shards")) {
            List<JsonNode> recorded = new ArrayList<>();
            shard.path("files").forEach(recorded::add);
            if (recorded.isEmpty()) {
                recorded.add(shard);
            }
            for (JsonNode file : recorded) {
                crc.update(value.clear().putLong(file.path("crc32c").asLong()).flip());
            }
        }
        return crc.getValue();
    }

    /** The metadata's {@code cast_from}: {@code FLOAT64}, or null. */
    static DType castFrom(JsonNode metadata) {
        return "float64".equals(metadata.path(ShardPlan.CAST_FROM).asText(null)) ? DType.FLOAT64 : null;
    }

    /** Checks that an array file exists and holds {@code rows} (x {@code columns} when 2-D) little-endian C-order values of a type. */
    static NpyHeader checkArray(Path npy, DType type, long rows, long columns) {
        if (!Files.exists(npy)) {
            throw new MemfitException(npy + ": expected the shard listed in " + ShardWriter.METADATA + ", found no file");
        }
        NpyHeader header = Npy.readHeader(npy);
        long[] expected = columns < 0 ? new long[]{rows} : new long[]{rows, columns};
        boolean littleEndian = header.byteOrder().equals(ByteOrder.LITTLE_ENDIAN);
        if (!Arrays.equals(header.shape(), expected) || header.dtype() != type || !littleEndian
                || (header.fortranOrder() && expected.length > 1)) {
            throw new InvalidFileException(npy, -1, type.numpyCode() + " " + Arrays.toString(expected) + " as the metadata says",
                    header.dtype().numpyCode() + " " + Arrays.toString(header.shape())
                            + (littleEndian ? "" : " big-endian") + (header.fortranOrder() ? " Fortran order" : ""));
        }
        return header;
    }

    /** Checks a CSR shard's row pointers: from 0, never decreasing, ending at the stored values. */
    static void checkPointers(NpyArray indptr, long nnz) {
        MemorySegment data = indptr.data();
        long n = indptr.rows();
        long previous = data.get(LONG_LE, 0);
        if (previous != 0) {
            throw new InvalidFileException(indptr.path(), indptr.header().dataOffset(), "row pointers starting at 0",
                    "indptr[0] = " + previous);
        }
        for (long i = 1; i < n; i++) {
            long pointer = data.get(LONG_LE, i * Long.BYTES);
            if (pointer < previous) {
                throw new InvalidFileException(indptr.path(), indptr.header().dataOffset() + i * Long.BYTES,
                        "row pointers that never decrease", "indptr[" + i + "] = " + pointer + " < indptr[" + (i - 1)
                        + "] = " + previous);
            }
            previous = pointer;
        }
        if (previous != nnz) {
            throw new InvalidFileException(indptr.path(), indptr.header().dataOffset() + (n - 1) * Long.BYTES,
                    "the last row pointer at the " + nnz + " stored values of the shard", "indptr[" + (n - 1) + "] = " + previous);
        }
    }

    private static Path roleFile(Path folder, JsonNode shard, String role) {
        for (JsonNode file : shard.path("files")) {
            if (role.equals(file.path("role").asText())) {
                return folder.resolve(file.path("file").asText());
            }
        }
        throw new InvalidFileException(folder.resolve(ShardWriter.METADATA), -1, "a " + role + " file listed for each "
                + "sparse shard", "none for the shard of " + shard.path("metadata").asText());
    }

    /**
     * Opens a folder: checks metadata, presence, types and shapes (not checksums; see {@link #validate}) and maps
     * every shard.
     *
     * @param folder the folder
     * @return the store, to be closed
     */
    public static ShardStore open(Path folder) {
        JsonNode metadata = metadata(folder);
        long genes = metadata.path("vocabulary").size();
        ShardLayout layout = ShardLayout.of(metadata.path("layout").asText(ShardLayout.DENSE.key()));
        DType dtype = dtype(metadata, folder.resolve(ShardWriter.METADATA));
        List<NpyArray> arrays = new ArrayList<>();
        List<Path> files = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        try {
            for (JsonNode shard : metadata.path("shards")) {
                long cells = shard.path("cells").asLong();
                if (layout == ShardLayout.DENSE) {
                    Path npy = folder.resolve(shard.path("file").asText());
                    checkArray(npy, dtype, cells, genes);
                    files.add(npy);
                    arrays.add(Npy.map(npy));
                } else {
                    SparseFiles sparse = SparseFiles.checked(folder, shard, cells, dtype);
                    files.addAll(List.of(sparse.data(), sparse.indices(), sparse.indptr()));
                    arrays.add(Npy.map(sparse.data()));
                    arrays.add(Npy.map(sparse.indices()));
                    arrays.add(Npy.map(sparse.indptr()));
                    checkPointers(arrays.getLast(), sparse.nnz());
                }
                sizes.add(cells);
            }
        } catch (RuntimeException e) {
            arrays.forEach(NpyArray::close);
            throw e;
        }
        List<String> names = new ArrayList<>();
        metadata.path("vocabulary").forEach(name -> names.add(name.asText()));
        ShardStore store = new ShardStore(folder, layout, arrays, files, sizes.stream().mapToLong(Long::longValue).toArray(),
                new GeneVocabulary(names), dtype);
        store.castFrom = castFrom(metadata);
        store.recordedChecksums = recordedChecksums(metadata);
        return store;
    }

    /**
     * The files holding the cells' values, in shard order: one {@code .npy} per dense shard, the
     * {@code .data.npy}, {@code .indices.npy} and {@code .indptr.npy} of each sparse shard.
     *
     * @return the files
     */
    public List<Path> shardFiles() {
        return files;
    }

    /**
     * The columns of the shards' cell tables (the source's {@code obs} columns the conversion carried).
     *
     * @return the column names, in the tables' order (empty without shards)
     */
    public List<String> cellColumns() {
        JsonNode first = metadata(folder).path("shards").path(0);
        if (first.isMissingNode()) {
            return List.of();
        }
        return List.copyOf(CellTable.read(folder.resolve(first.path("metadata").asText())).keySet());
    }

    /**
     * The class of every cell from a column of the shards' cell tables (the source's {@code obs}, carried shard by
     * shard), as {@code Datasets.labels} reads an {@code .h5ad}'s: for a classifier's targets or a weighted sampler.
     *
     * @param column the column, such as "cell_type"
     * @return the class of each cell, in the store's order, and the class names, sorted
     * @throws dev.memfit.MemfitException naming the columns there are when this one is missing, or when it holds numbers
     */
    public dev.memfit.sample.Labels labels(String column) {
        JsonNode metadata = metadata(folder);
        List<String> names = new ArrayList<>();
        for (JsonNode shard : metadata.path("shards")) {
            Path table = folder.resolve(shard.path("metadata").asText());
            java.util.Map<String, dev.memfit.io.anndata.FrameColumn> columns = CellTable.read(table);
            dev.memfit.io.anndata.FrameColumn values = columns.get(column);
            if (values == null) {
                throw new dev.memfit.MemfitException(table + ": the cell table has no column '" + column + "'; it has "
                        + String.join(", ", columns.keySet()));
            }
            names.addAll(java.util.Arrays.asList(dev.memfit.sample.Labels.namesOf(values.labels(), table.toString(), column)));
        }
        if (names.size() != cells) {
            throw new dev.memfit.MemfitException(folder + ": the cell tables have " + names.size() + " rows, the shards "
                    + cells + " cells");
        }
        return dev.memfit.sample.Labels.of(names.toArray(String[]::new), column);
    }

    /**
     * How the shards store their cells.
     *
     * @return dense or sparse (CSR)
     */
    public ShardLayout layout() {
        return layout;
    }

    /**
     * The values stored: the non-zero values of sparse shards, every cell x gene of dense ones.
     *
     * @return the stored values
     */
    public long storedValues() {
        return storedValues;
    }

    /** Shards larger than the memory this process may use pass the loader's order on to the kernel (every mapped array). */
    @Override
    public void expectReads(dev.memfit.io.storage.PageCache.ReadAdvice order) {
        boolean fits = dev.memfit.ProcessMemory.current().fitsInMemory(storedBytes());
        for (NpyArray array : arrays) {
            dev.memfit.io.storage.PageCache.advise(array.data(), fits ? dev.memfit.io.storage.PageCache.ReadAdvice.NORMAL : order);
        }
    }

    /**
     * The bytes of {@link #shardFiles()} on disk: what mapping the store addresses and the page cache holds when
     * warm (for sparse shards, about the size of the source's sparse X, not {@link #totalBytes()}).
     *
     * @return bytes
     */
    public long storedBytes() {
        return storedBytes;
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
        return sizes.clone();
    }

    @Override
    public long size() {
        return cells;
    }

    @Override
    public Shape sampleShape() {
        return new Shape(genes);
    }

    /**
     * The type of the shards' values, in which cells are read: float32, or float64 for shards of a float64 source.
     *
     * @return {@code FLOAT32} or {@code FLOAT64}
     */
    @Override
    public DType dtype() {
        return dtype;
    }

    /**
     * The type the source's values were cast from, when the shards hold a narrower one ({@code ./memfit shard
     * --dtype float32} of a float64 X; the metadata's {@code cast_from}).
     *
     * @return {@code FLOAT64}, or null when the shards hold the source's values exactly (or the folder predates the
     *         record)
     */
    public DType castFrom() {
        return castFrom;
    }

    /**
     * The shards are mapped: cells are copied (or densified) from memory while the page cache can hold them. Shards
     * larger than the memory left to this process are read from storage as cells are touched, a whole batch a
     * thread, as a mapped {@code .npy} that large is ({@link dev.memfit.source.NpySource#readsFromMemory()}).
     */
    @Override
    public boolean readsFromMemory() {
        return readsFromMemory(dev.memfit.ProcessMemory.current());
    }

    /** {@link #readsFromMemory()} with the memory this process may use given. */
    boolean readsFromMemory(dev.memfit.ProcessMemory memory) {
        return memory.fitsInMemory(storedBytes);
    }

    @Override
    public void readBatch(long[] cellIndices, MemorySegment into) {
        long rowBytes = (long) genes * valueBytes;
        for (int i = 0; i < cellIndices.length; i++) {
            readRow(cellIndices[i], into, i * rowBytes);
        }
    }

    @Override
    public void read(long index, MemorySegment into) {
        readRow(index, into, 0);
    }

    /** One cell, dense in the shards' type, at {@code offset} in {@code into}: straight from the shard's mappings. */
    private void readRow(long index, MemorySegment into, long offset) {
        int shard = shardOf(index);
        long row = index - starts[shard];
        long rowBytes = (long) genes * valueBytes;
        if (rows != null) {
            // one copy per row, no slice or view per row
            dev.memfit.NativeCopy.copy(rows[shard], row * rowBytes, into, offset, rowBytes);
            return;
        }
        MemorySegment shardPointers = pointers[shard];
        long start = shardPointers.get(LONG_LE, row * Long.BYTES);
        long end = shardPointers.get(LONG_LE, (row + 1) * Long.BYTES);
        // the row's runs as slices indexed by an int: the JIT hoists the bounds checks out of such loops
        int n = Math.toIntExact(end - start);
        MemorySegment rowValues = values[shard].asSlice(start * valueBytes, (long) n * valueBytes);
        MemorySegment rowIndices = indices[shard].asSlice(start * Integer.BYTES, (long) n * Integer.BYTES);
        MemorySegment out = into.asSlice(offset, rowBytes);
        dev.memfit.NativeCopy.zero(out, 0, rowBytes);
        if (valueBytes == Double.BYTES) {
            for (int k = 0; k < n; k++) {
                int gene = rowIndices.getAtIndex(INT_LE, k);
                if (Integer.compareUnsigned(gene, genes) >= 0) {
                    throw badIndex(shard, start + k, gene);
                }
                out.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, gene, rowValues.getAtIndex(DOUBLE_LE, k));
            }
            return;
        }
        try {
            for (int k = 0; k < n; k++) {
                // set, not added: ShardWriter stores each cell's genes sorted and unique (duplicates of the source
                // summed as it writes), and validate refuses a shard whose genes are not strictly ascending. The
                // row's own bounds check refuses a gene outside it (negative too): one check a value, not two
                out.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, rowIndices.getAtIndex(INT_LE, k), rowValues.getAtIndex(FLOAT_LE, k));
            }
        } catch (IndexOutOfBoundsException e) {
            // a bad index must not land in the next cell's row: name the first one
            for (int k = 0; k < n; k++) {
                int gene = rowIndices.getAtIndex(INT_LE, k);
                if (Integer.compareUnsigned(gene, genes) >= 0) {
                    throw badIndex(shard, start + k, gene);
                }
            }
            throw e;
        }
    }

    /**
     * The cells of CSR shards as stored, straight from the shards' mappings (gene indices checked as they are
     * copied); empty for dense shards.
     */
    @Override
    public java.util.Optional<dev.memfit.source.SparseRows> sparseRows() {
        if (layout != ShardLayout.SPARSE) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(new dev.memfit.source.SparseRows() {
            @Override
            public long storedValues() {
                return storedValues;
            }

            @Override
            public long storedValues(long[] rows) {
                long total = 0;
                for (long index : rows) {
                    int shard = shardOf(index);
                    long row = index - starts[shard];
                    total += pointers[shard].get(LONG_LE, (row + 1) * Long.BYTES) - pointers[shard].get(LONG_LE, row * Long.BYTES);
                }
                return total;
            }

            @Override
            public long read(long[] rows, MemorySegment into, MemorySegment columns, MemorySegment rowOffsets) {
                long done = 0;
                rowOffsets.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 0L);
                for (int r = 0; r < rows.length; r++) {
                    int shard = shardOf(rows[r]);
                    long row = rows[r] - starts[shard];
                    long start = pointers[shard].get(LONG_LE, row * Long.BYTES);
                    long n = pointers[shard].get(LONG_LE, (row + 1) * Long.BYTES) - start;
                    MemorySegment.copy(indices[shard], INT_LE, start * Integer.BYTES, columns, ValueLayout.JAVA_INT_UNALIGNED,
                            done * Integer.BYTES, n);
                    for (long k = 0; k < n; k++) {
                        int gene = columns.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, done + k);
                        if (Integer.compareUnsigned(gene, genes) >= 0) {
                            throw badIndex(shard, start + k, gene);
                        }
                    }
                    if (valueBytes == Double.BYTES) {
                        MemorySegment.copy(values[shard], DOUBLE_LE, start * Double.BYTES, into, ValueLayout.JAVA_DOUBLE_UNALIGNED,
                                done * Double.BYTES, n);
                    } else {
                        MemorySegment.copy(values[shard], FLOAT_LE, start * Float.BYTES, into, ValueLayout.JAVA_FLOAT_UNALIGNED,
                                done * Float.BYTES, n);
                    }
                    done += n;
                    rowOffsets.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, r + 1, done);
                }
                return done;
            }
        });
    }

    private InvalidFileException badIndex(int shard, long k, int gene) {
        return new InvalidFileException(indexFiles[shard], indexOffsets[shard] + k * Integer.BYTES,
                "gene indices in [0, " + genes + ") (the vocabulary)", "index " + gene + " at stored value " + k);
    }

    private int shardOf(long index) {
        if (index < 0 || index >= cells) {
            throw new IndexOutOfBoundsException("cell " + index + " outside [0, " + cells + ") of " + folder);
        }
        int shard = Arrays.binarySearch(starts, index);
        if (shard >= 0) {
            // an empty shard shares its start with the next one: the cell is in the last shard starting there
            while (shard + 1 < starts.length && starts[shard + 1] == index) {
                shard++;
            }
            return shard;
        }
        return -shard - 2;
    }

    /** The folder's name, cells, genes, layout, shard sizes and stored bytes: a rewritten folder differs. */
    @Override
    public String fingerprint() {
        return folder.getFileName() + ": " + layout + " shards, " + cells + " cells x " + genes + " genes, shard sizes hash "
                + java.util.Arrays.hashCode(sizes) + ", " + storedValues + (dtype == DType.FLOAT64 ? " float64" : "")
                + " values in " + storedBytes + " bytes" + dev.memfit.source.SampleSource.content(recordedChecksums);
    }

    @Override
    public String describe() {
        return sizes.length + (layout == ShardLayout.SPARSE ? " sparse (CSR) shards" : " shards")
                + (dtype == DType.FLOAT64 ? " of float64" : "") + " in " + folder.getFileName();
    }

    @Override
    public void close() {
        arrays.forEach(NpyArray::close);
    }
}
