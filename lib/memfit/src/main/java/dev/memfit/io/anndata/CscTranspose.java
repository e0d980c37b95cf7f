package dev.memfit.io.anndata;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.NativeMemory;
import dev.memfit.Params;
import dev.memfit.ProgressListener;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.storage.Folders;

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

/**
 * The out-of-core transpose of a CSC matrix (anndata's {@code csc_matrix} X) into CSR rows, with bounded memory: what
 * lets an {@link AnnData} reader ({@code .h5ad} or {@code .zarr}) read cells of a store whose X is stored gene by gene.
 *
 * <p>Three sequential passes over the stored values, reported to a {@link ProgressListener} as one task,
 * "Transposing X (CSC to CSR)", in stored values:
 * <ol>
 * <li>the row indices are scanned once: checked against {@code n_obs} and counted per row, giving the CSR row
 *     pointers (8 bytes per cell, kept in memory: the reader needs them);</li>
 * <li>when the whole CSR (8 bytes per stored value: float32 value and int32 column; 12 for a float64 X) fits in the
 *     memory budget, one more scan scatters it in memory. Otherwise the rows are cut into bands of at most half the
 *     budget, and one scan appends each value, with its row and column, to its band's region of one scratch file (12
 *     bytes a value, 16 for float64;
 *     each band's region is known from the row counts, so no band needs its own file); the other half of the budget
 *     is the write buffers of the bands;</li>
 * <li>each band's region is read back sequentially and scattered into its rows, then the band is written.</li>
 * </ol>
 * Column indices come out sorted within each row for free: values are met in column order. Memory: the budget
 * ({@link #DEFAULT_BUDGET}, or {@code -Dmemfit.transpose.budget=BYTES}), plus 8 bytes per cell for the row
 * pointers, plus 8 bytes per gene for the column pointers; a single row larger than a band gets a band of its own.
 * Disk: 8 bytes per stored value for the result, plus 12 for the scratch file while it is being built.
 *
 * <p>The result is two raw files in native byte order, {@code values.f32} (or {@code values.f64}: a float64 X keeps
 * its values exactly) and {@code columns.i32}, written under temporary names, renamed when complete, and mapped
 * read-only. Plumbing shared by the readers in {@code io.hdf5} and {@code io.zarr}, public only for that; not a user API.
 */
public final class CscTranspose {

    /** The default memory budget of a transpose: 256 MiB. */
    public static final long DEFAULT_BUDGET = 256L << 20;

    /** Stored values read at once from the CSC arrays. */
    private static final int BLOCK = 1 << 20;

    /** Bytes of one value in the scratch file besides the value: row within its band (int32), column (int32). */
    private static final int POSITION = 8;

    /** The smallest write buffer of a band, whatever the budget, in entries. */
    private static final int MIN_BUFFER_ENTRIES = 256;

    /** The CSC arrays of X, read by ranges of stored values. */
    public interface Source {
        /**
         * Row indices of stored values {@code [start, start + n)}.
         *
         * @param start the first stored value
         * @param n how many
         * @param into receives them
         */
        void rows(long start, int n, long[] into);

        /**
         * Stored values {@code [start, start + n)} as float64, exactly as stored.
         *
         * @param start the first stored value
         * @param n how many
         * @param into receives them
         */
        void values(long start, int n, double[] into);

        /**
         * The byte position in the file of a row index, for messages.
         *
         * @param element a stored value
         * @return its position, or -1 when compressed
         */
        long rowIndexOffset(long element);
    }

    /**
     * A transposed X: CSR row pointers in memory, values and column indices mapped from the scratch folder.
     *
     * @param rowPointers {@code n_obs + 1} row pointers
     * @param values float32 or float64 values in native byte order
     * @param columns int32 column indices in native byte order, non-decreasing within each row (a row stored twice
     *                in a column of the CSC gives two neighbouring entries of that column, which readers sum)
     * @param valueType {@code FLOAT32} or {@code FLOAT64}: the type of {@code values}
     */
    public record Rows(long[] rowPointers, MemorySegment values, MemorySegment columns, DType valueType) {
    }

    private final Path file;
    private final Source source;
    private final long[] columnPointers;
    private final long observations;
    private final long budget;
    /** The type of the transposed values, and its size; the size of one scratch entry. */
    private final DType valueType;
    private final int valueBytes;
    private final int entry;

    /**
     * A transpose of a checked CSC X.
     *
     * @param file the {@code .h5ad} or zarr store, for messages
     * @param source its {@code X/indices} (row indices) and {@code X/data}
     * @param columnPointers {@code X/indptr}: {@code n_vars + 1} monotone pointers from 0 to the number of values
     * @param observations n_obs
     * @param budget the memory budget in bytes
     * @param valueType {@code FLOAT32}, or {@code FLOAT64} to keep a float64 X's values exactly
     */
    public CscTranspose(Path file, Source source, long[] columnPointers, long observations, long budget, DType valueType) {
        if (valueType != DType.FLOAT32 && valueType != DType.FLOAT64) {
            throw new IllegalArgumentException("a transpose holds FLOAT32 or FLOAT64 values, not " + valueType);
        }
        this.valueType = valueType;
        this.valueBytes = valueType.byteSize();
        this.entry = POSITION + valueBytes;
        if (budget < 16 * (long) entry) {
            throw new MemfitException("a transpose budget of " + budget + " bytes is too small; give at least " + 16 * entry);
        }
        this.file = file;
        this.source = source;
        this.columnPointers = columnPointers;
        this.observations = observations;
        this.budget = budget;
    }

    /**
     * The budget set by {@code -Dmemfit.transpose.budget} (or {@code MEMFIT_TRANSPOSE_BUDGET}), else the default.
     *
     * @return bytes
     */
    public static long configuredBudget() {
        return Long.parseLong(Params.string("transpose.budget", Long.toString(DEFAULT_BUDGET)).replace("_", "").trim());
    }

    /**
     * The folder under which transposes are written by default: {@code -Dmemfit.scratch} (or
     * {@code MEMFIT_SCRATCH}), else {@code java.io.tmpdir}.
     *
     * @return the folder
     */
    public static Path defaultScratch() {
        return Path.of(Params.string("scratch", System.getProperty("java.io.tmpdir")));
    }

    /**
     * Transposes into {@code folder} (created when missing; its files are the caller's to delete) and maps the
     * result into {@code arena}.
     *
     * @param folder a folder of its own for this transpose
     * @param arena where the result is mapped
     * @param listener where progress goes
     * @return the CSR rows
     * @throws InvalidFileException when a row index lies outside {@code [0, n_obs)}
     */
    public Rows run(Path folder, Arena arena, ProgressListener listener) {
        long nnz = columnPointers[columnPointers.length - 1];
        try {
            Files.createDirectories(folder);
            long[] rowPointers = new long[Math.toIntExact(observations + 1)];
            boolean banded = nnz * (Integer.BYTES + valueBytes) > budget;
            try (ProgressListener.Task progress = listener.start("Transposing X (CSC to CSR)", nnz * (banded ? 3 : 2), "values")) {
                count(rowPointers, progress);
                String valuesName = valueType == DType.FLOAT64 ? "values.f64" : "values.f32";
                Path values = folder.resolve(valuesName);
                Path columns = folder.resolve("columns.i32");
                Path valuesPartial = folder.resolve("." + valuesName + ".partial");
                Path columnsPartial = folder.resolve(".columns.i32.partial");
                try (FileChannel valuesOut = create(valuesPartial); FileChannel columnsOut = create(columnsPartial)) {
                    if (banded) {
                        banded(folder, rowPointers, valuesOut, columnsOut, progress);
                    } else {
                        inMemory(rowPointers, valuesOut, columnsOut, progress);
                    }
                }
                AtomicMove.replace(valuesPartial, values);
                AtomicMove.replace(columnsPartial, columns);
                return new Rows(rowPointers, map(values, arena), map(columns, arena), valueType);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the CSR transpose of " + file + " X to " + folder
                    + "; give another scratch folder (-Dmemfit.scratch=DIR)", e);
        }
    }

    /** Pass 1: checks every row index and counts the values of each row into {@code rowPointers[r + 1]}, then sums. */
    private void count(long[] rowPointers, ProgressListener.Task progress) {
        long nnz = columnPointers[columnPointers.length - 1];
        long[] rows = new long[(int) Math.min(BLOCK, Math.max(1, nnz))];
        int column = 0;
        for (long start = 0; start < nnz; start += rows.length) {
            int n = (int) Math.min(rows.length, nnz - start);
            source.rows(start, n, rows);
            for (int i = 0; i < n; i++) {
                long row = rows[i];
                if (row < 0 || row >= observations) {
                    long at = start + i;
                    while (columnPointers[column + 1] <= at) {
                        column++;
                    }
                    throw new InvalidFileException(file, source.rowIndexOffset(at), "X/indices (row indices of a CSC X) in [0, "
                            + observations + ") (n_obs)", "row " + row + " at stored value " + at + " (column " + column + ")");
                }
                rowPointers[(int) row + 1]++;
            }
            progress.step(n);
        }
        for (int r = 1; r < rowPointers.length; r++) {
            rowPointers[r] += rowPointers[r - 1];
        }
    }

    /** Pass 2 when everything fits: one scan scatters every value into its row, in memory; then one write each. */
    private void inMemory(long[] rowPointers, FileChannel valuesOut, FileChannel columnsOut, ProgressListener.Task progress)
            throws IOException {
        long nnz = rowPointers[rowPointers.length - 1];
        try (Arena band = Arena.ofConfined();
             NativeMemory.Reservation reserved = NativeMemory.ALLOCATED.reserve(nnz * (Integer.BYTES + valueBytes))) {
            MemorySegment values = band.allocate(Math.max(1, nnz * valueBytes), valueBytes);
            MemorySegment columns = band.allocate(Math.max(1, nnz * Integer.BYTES), Integer.BYTES);
            scan((row, column, value) -> {
                long at = rowPointers[row]++;
                setValue(values, at, value);
                columns.setAtIndex(ValueLayout.JAVA_INT, at, column);
            }, progress);
            // each pointer was moved on to the next row's start: shift them back
            System.arraycopy(rowPointers, 0, rowPointers, 1, rowPointers.length - 1);
            rowPointers[0] = 0;
            write(valuesOut, values.asSlice(0, nnz * valueBytes));
            write(columnsOut, columns.asSlice(0, nnz * Integer.BYTES));
        }
    }

    /** Stores a value in the transpose's type: float32 rounds it, float64 keeps it. */
    private void setValue(MemorySegment values, long at, double value) {
        if (valueBytes == Double.BYTES) {
            values.setAtIndex(ValueLayout.JAVA_DOUBLE, at, value);
        } else {
            values.setAtIndex(ValueLayout.JAVA_FLOAT, at, (float) value);
        }
    }

    /** Receives stored values in column order. */
    @FunctionalInterface
    private interface Visitor {
        void accept(int row, int column, double value) throws IOException;
    }

    /** One scan of the CSC arrays, in blocks, handing each value with its row and column to {@code visitor}. */
    private void scan(Visitor visitor, ProgressListener.Task progress)
            throws IOException {
        long nnz = columnPointers[columnPointers.length - 1];
        int block = (int) Math.min(BLOCK, Math.max(1, nnz));
        long[] rows = new long[block];
        double[] values = new double[block];
        int column = 0;
        for (long start = 0; start < nnz; start += block) {
            int n = (int) Math.min(block, nnz - start);
            source.rows(start, n, rows);
            source.values(start, n, values);
            for (int i = 0; i < n; i++) {
                while (columnPointers[column + 1] <= start + i) {
                    column++;
                }
                visitor.accept((int) rows[i], column, values[i]);
            }
            progress.step(n);
        }
    }

    /**
     * Passes 2 and 3 when the CSR does not fit: values go to their band's region of a scratch file, then each band is
     * read back, scattered into its rows and written.
     */
    private void banded(Path folder, long[] rowPointers, FileChannel valuesOut, FileChannel columnsOut,
                        ProgressListener.Task progress) throws IOException {
        long capacity = budget / 2 / (Integer.BYTES + valueBytes);
        // band b holds rows [bandStarts[b], bandStarts[b + 1]): as many whole rows as fit, at least one
        int[] bandStarts = bands(rowPointers, capacity);
        int bands = bandStarts.length - 1;
        long largestBand = 0;
        for (int b = 0; b < bands; b++) {
            largestBand = Math.max(largestBand, rowPointers[bandStarts[b + 1]] - rowPointers[bandStarts[b]]);
        }
        int entry = this.entry;
        int bufferBytes = (int) Math.max(MIN_BUFFER_ENTRIES * entry, Math.min(64L << 20, budget / 2 / bands / entry * entry));
        Path scratch = folder.resolve(".bands.partial");
        try (FileChannel bucket = FileChannel.open(scratch, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.DELETE_ON_CLOSE)) {
            long[] written = new long[bands];
            try (Arena buffers = Arena.ofConfined();
                 NativeMemory.Reservation reserved = NativeMemory.ALLOCATED.reserve((long) bufferBytes * bands)) {
                ByteBuffer[] pending = new ByteBuffer[bands];
                for (int b = 0; b < bands; b++) {
                    pending[b] = buffers.allocate(bufferBytes).asByteBuffer().order(ByteOrder.nativeOrder());
                }
                scan((row, column, value) -> {
                    int b = band(bandStarts, row);
                    ByteBuffer buffer = pending[b];
                    buffer.putInt(row - bandStarts[b]).putInt(column);
                    if (valueBytes == Double.BYTES) {
                        buffer.putDouble(value);
                    } else {
                        buffer.putFloat((float) value);
                    }
                    if (!buffer.hasRemaining()) {
                        written[b] += flush(bucket, buffer, rowPointers[bandStarts[b]] * entry + written[b]);
                    }
                }, progress);
                for (int b = 0; b < bands; b++) {
                    written[b] += flush(bucket, pending[b], rowPointers[bandStarts[b]] * entry + written[b]);
                }
            }
            try (Arena band = Arena.ofConfined();
                 NativeMemory.Reservation reserved = NativeMemory.ALLOCATED.reserve(largestBand * (Integer.BYTES + valueBytes)
                         + bufferBytes)) {
                MemorySegment values = band.allocate(Math.max(1, largestBand * valueBytes), valueBytes);
                MemorySegment columns = band.allocate(Math.max(1, largestBand * Integer.BYTES), Integer.BYTES);
                ByteBuffer read = band.allocate(bufferBytes).asByteBuffer().order(ByteOrder.nativeOrder());
                for (int b = 0; b < bands; b++) {
                    int first = bandStarts[b];
                    int last = bandStarts[b + 1];
                    long base = rowPointers[first];
                    long entries = rowPointers[last] - base;
                    long saved = rowPointers[first];
                    long position = base * entry;
                    long end = position + entries * entry;
                    while (position < end) {
                        read.clear().limit((int) Math.min(read.capacity(), end - position));
                        while (read.hasRemaining()) {
                            if (bucket.read(read, position + read.position()) < 0) {
                                throw new IOException("the scratch file " + scratch + " ended early");
                            }
                        }
                        read.flip();
                        position += read.limit();
                        while (read.hasRemaining()) {
                            int row = first + read.getInt();
                            int column = read.getInt();
                            double value = valueBytes == Double.BYTES ? read.getDouble() : read.getFloat();
                            long at = rowPointers[row]++ - base;
                            setValue(values, at, value);
                            columns.setAtIndex(ValueLayout.JAVA_INT, at, column);
                        }
                        progress.step(read.limit() / entry);
                    }
                    // the band's pointers were moved on to the next row's start: shift them back
                    System.arraycopy(rowPointers, first, rowPointers, first + 1, last - first - 1);
                    rowPointers[first] = saved;
                    write(valuesOut, values.asSlice(0, entries * valueBytes));
                    write(columnsOut, columns.asSlice(0, entries * Integer.BYTES));
                }
            }
        }
    }

    /** Cuts rows into bands of at most {@code capacity} values (a larger row alone). */
    private static int[] bands(long[] rowPointers, long capacity) {
        int cells = rowPointers.length - 1;
        java.util.ArrayList<Integer> starts = new java.util.ArrayList<>();
        starts.add(0);
        int first = 0;
        while (first < cells) {
            int last = first + 1;
            while (last < cells && rowPointers[last + 1] - rowPointers[first] <= capacity) {
                last++;
            }
            starts.add(last);
            first = last;
        }
        return starts.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The band of a row: the last start at or before it. */
    private static int band(int[] bandStarts, int row) {
        int low = 0;
        int high = bandStarts.length - 2;
        while (low < high) {
            int middle = (low + high + 1) >>> 1;
            if (bandStarts[middle] <= row) {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        return low;
    }

    private static long flush(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        buffer.flip();
        long bytes = buffer.remaining();
        while (buffer.hasRemaining()) {
            position += channel.write(buffer, position);
        }
        buffer.clear();
        return bytes;
    }

    private static FileChannel create(Path path) throws IOException {
        return FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
    }

    private static void write(FileChannel channel, MemorySegment bytes) throws IOException {
        // in 64 MiB slices: one ByteBuffer cannot exceed 2 GiB
        for (long done = 0; done < bytes.byteSize(); ) {
            ByteBuffer buffer = bytes.asSlice(done, Math.min(64L << 20, bytes.byteSize() - done)).asByteBuffer();
            while (buffer.hasRemaining()) {
                done += channel.write(buffer);
            }
        }
    }

    private static MemorySegment map(Path path, Arena arena) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            return channel.size() == 0 ? MemorySegment.ofArray(new byte[0])
                    : channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
        }
    }

    /**
     * Deletes a transpose folder and what is in it.
     *
     * @param folder the folder given to {@link #run}
     */
    public static void delete(Path folder) {
        try {
            Folders.deleteTree(folder);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the transpose folder " + folder, e);
        }
    }
}
