package dev.memfit.source;

import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.io.anndata.AnnData;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The cells of an AnnData matrix ({@code X}, {@code raw/X} or a layer of an {@code .h5ad} file or a {@code .zarr}
 * store) as samples: sample {@code i} is row {@code i}, dense, {@code n_vars} values in X's float type (float32, or
 * float64 for a float64 X).
 *
 * <p>Rows are read where they lie (a mapped file, or decoded chunks of a compressed one through the reader's chunk
 * cache): a batch is sorted and read as runs of consecutive cells, so that a sequential or block-shuffled order (see
 * {@link dev.memfit.sample.BlockShuffleSampler}) reads each stretch of the file once per batch. Nothing of the data is
 * held here; the loader's memory is its batch buffers.
 */
public final class AnnDataSource implements SampleSource {

    private final AnnData cells;
    private final String name;
    private final DType type;
    private final Shape sampleShape;
    private final long rowBytes;
    private final AutoCloseable alsoClose;

    /**
     * A source over an open reader, which it closes. A CSC matrix is transposed now (with the reader's progress), not
     * at the first batch.
     *
     * @param cells the reader, such as {@code AnnDataFiles.builder().setFile(path).optLayer(layer).open()}
     * @param name what the rows are read from, for descriptions and errors (the path, or an object's address)
     */
    public AnnDataSource(AnnData cells, String name) {
        this(cells, name, () -> { });
    }

    /**
     * A source over an open reader, which it closes, then {@code alsoClose} (what the reader reads through: a staged
     * copy's pin, a cache opened for it).
     *
     * @param cells the reader
     * @param name what the rows are read from
     * @param alsoClose closed after the reader
     */
    public AnnDataSource(AnnData cells, String name, AutoCloseable alsoClose) {
        this.alsoClose = alsoClose;
        this.cells = cells;
        this.name = name;
        this.type = cells.floatType();
        this.sampleShape = new Shape(cells.variables());
        this.rowBytes = Math.multiplyExact(cells.variables(), type.byteSize());
        cells.prepareRows();
    }

    /**
     * The reader (for the {@code obs}/{@code var} columns and sums of the file the rows come from).
     *
     * @return the reader, closed with this source
     */
    public AnnData reader() {
        return cells;
    }

    @Override
    public long size() {
        return cells.observations();
    }

    @Override
    public Shape sampleShape() {
        return sampleShape;
    }

    @Override
    public DType dtype() {
        return type;
    }

    @Override
    public void read(long index, MemorySegment into) {
        java.util.Objects.checkIndex(index, size());
        cells.readRows(index, 1, into, type);
    }

    /**
     * Reads the cells sorted, as runs of consecutive rows, each to its place in the batch.
     */
    @Override
    public void readBatch(long[] indices, MemorySegment into) {
        int n = indices.length;
        if (n == 0) {
            return;
        }
        int[] places = byCell(indices, size());
        int start = 0;
        while (start < n) {
            int end = start + 1;
            while (end < n && indices[places[end]] == indices[places[end - 1]] + 1) {
                end++;
            }
            int count = end - start;
            long[] runOffsets = new long[count];
            for (int r = 0; r < count; r++) {
                runOffsets[r] = places[start + r] * rowBytes;
            }
            cells.readRows(indices[places[start]], count, into, runOffsets, type);
            start = end;
        }
    }

    /**
     * The cells as stored, for a CSR or CSC X (a CSC X through its transpose): runs of consecutive cells are read at
     * once, through the reader's chunk cache for a compressed file.
     */
    @Override
    public java.util.Optional<SparseRows> sparseRows() {
        if (!cells.sparse()) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(new SparseRows() {
            @Override
            public long storedValues() {
                return cells.storedValues();
            }

            @Override
            public long storedValues(long[] rows) {
                long total = 0;
                for (long row : rows) {
                    total += cells.storedValues(row, 1);
                }
                return total;
            }

            @Override
            public long read(long[] rows, MemorySegment values, MemorySegment columns, MemorySegment rowOffsets) {
                int n = rows.length;
                long done = 0;
                rowOffsets.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0, 0L);
                int start = 0;
                while (start < n) {
                    int end = start + 1;
                    while (end < n && rows[end] == rows[end - 1] + 1) {
                        end++;
                    }
                    int count = end - start;
                    java.util.Objects.checkIndex(rows[start], size());
                    java.util.Objects.checkIndex(rows[end - 1], size());
                    long[] starts = new long[count + 1];
                    long read = cells.readCsr(rows[start], count, values.asSlice(done * type.byteSize()),
                            columns.asSlice(done * Integer.BYTES), starts, type);
                    for (int r = 1; r <= count; r++) {
                        rowOffsets.setAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, start + r, done + starts[r]);
                    }
                    done += read;
                    start = end;
                }
                return done;
            }
        });
    }

    /** The places of a batch ordered by their cell (stable, so a cell asked twice keeps its places' order). */
    private static int[] byCell(long[] indices, long size) {
        int n = indices.length;
        int[] places = new int[n];
        boolean sorted = true;
        for (int i = 0; i < n; i++) {
            java.util.Objects.checkIndex(indices[i], size);
            sorted &= i == 0 || indices[i] >= indices[i - 1];
            places[i] = i;
        }
        if (sorted) {
            return places;
        }
        int placeBits = 32 - Integer.numberOfLeadingZeros(n);
        if (64 - Long.numberOfLeadingZeros(size) + placeBits < 63) {
            // one primitive sort of (cell, place) packed into a long
            long[] keys = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = indices[i] << placeBits | i;
            }
            Arrays.sort(keys);
            long mask = (1L << placeBits) - 1;
            for (int i = 0; i < n; i++) {
                places[i] = (int) (keys[i] & mask);
            }
            return places;
        }
        Integer[] boxed = new Integer[n];
        for (int i = 0; i < n; i++) {
            boxed[i] = i;
        }
        Arrays.sort(boxed, (a, b) -> Long.compare(indices[a], indices[b]));
        for (int i = 0; i < n; i++) {
            places[i] = boxed[i];
        }
        return places;
    }

    @Override
    public String describe() {
        return name + " (" + (cells.sparse() ? "sparse" : "dense") + " " + cells.observations() + " x "
                + cells.variables() + ", " + type.name().toLowerCase(java.util.Locale.ROOT) + ")";
    }

    /**
     * Keeps the decoded chunks of a window of cells: a block-shuffled order reads the {@code rows} cells of a window in
     * {@code runs} stretches of the file, batch after batch, and each chunk should be decoded once, not once per batch.
     * Raises the reader's chunk cache to about those cells' decoded values and column indices (a chunk more at each
     * end of each stretch); nothing changes for a file read from its mapping.
     *
     * @param rows the cells of the window
     * @param runs the stretches of consecutive cells it is made of
     */
    public void keepDecoded(long rows, long runs) {
        long perRow = cells.sparse()
                ? (long) Math.ceil((double) cells.storedValues() / Math.max(1, cells.observations())) * (type.byteSize() + Integer.BYTES)
                : rowBytes;
        long window = Math.multiplyExact(rows, perRow);
        // h5py's automatic chunks are at most 1 MiB: two arrays (values, indices), a part-chunk at each end of a run;
        // at most the window again (many short runs share their chunks with the window's other runs or are re-read)
        long ends = Math.min(Math.multiplyExact(runs, 4L << 20), window);
        cells.reserveChunkCache(Math.addExact(window / 4 * 5, ends));
    }

    @Override
    public void close() {
        try {
            cells.close();
        } finally {
            try {
                alsoClose.close();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new dev.memfit.MemfitException(name + ": " + e.getMessage(), e);
            }
        }
    }
}
