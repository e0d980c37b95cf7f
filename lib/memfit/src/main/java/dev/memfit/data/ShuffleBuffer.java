package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.io.anndata.AnnData;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Where {@link H5adStream} keeps the cells of its shuffle buffer: numbered slots, one cell each, filled by reader
 * threads a chunk at a time and emptied by the caller's thread one drawn cell at a time into a batch. The stream
 * decides which slots hold which cells (so the draw order does not depend on the layout); this decides how the
 * cells are stored.
 */
sealed interface ShuffleBuffer permits ShuffleBuffer.Dense, ShuffleBuffer.Sparse {

    /** The bytes this holds at most, allocated up front. */
    long bytes();

    /** Empties every slot: an epoch starts, with no read in flight. */
    void startEpoch();

    /**
     * Sets aside the room of a chunk about to be read, on the caller's thread, before the read is submitted.
     *
     * @param first the chunk's first cell
     * @param slots the slot of each of its cells, in order
     */
    void reserve(long first, int[] slots);

    /**
     * Reads a chunk into its slots, on a reader thread, after {@link #reserve}.
     *
     * @param h5ad this thread's reader
     * @param first the chunk's first cell
     * @param slots the slot of each of its cells, in order
     */
    void read(AnnData h5ad, long first, int[] slots);

    /**
     * Writes a slot's cell as a dense float32 row and frees the slot, on the caller's thread.
     *
     * @param slot the slot
     * @param out the batch
     * @param offset the row's byte offset in {@code out}
     */
    void emit(int slot, MemorySegment out, long offset);

    /** One dense float32 row per slot: for a dense X, and for a sparse X too dense for {@link Sparse} to save. */
    final class Dense implements ShuffleBuffer {
        private final long rowBytes;
        private final MemorySegment rows;

        Dense(Arena arena, int slots, long genes) {
            this.rowBytes = genes * Float.BYTES;
            this.rows = arena.allocate(Math.max(1, slots * rowBytes), 64);
        }

        static long bytes(int slots, long genes) {
            return slots * genes * Float.BYTES;
        }

        @Override
        public long bytes() {
            return rows.byteSize();
        }

        @Override
        public void startEpoch() {
        }

        @Override
        public void reserve(long first, int[] slots) {
        }

        @Override
        public void read(AnnData h5ad, long first, int[] slots) {
            long[] offsets = new long[slots.length];
            for (int i = 0; i < slots.length; i++) {
                offsets[i] = slots[i] * rowBytes;
            }
            h5ad.readRows(first, slots.length, rows, offsets);
        }

        @Override
        public void emit(int slot, MemorySegment out, long offset) {
            MemorySegment.copy(rows, slot * rowBytes, out, offset, rowBytes);
        }
    }

    /**
     * The cells of a sparse X as stored (float32 values and int32 column indices), in pages of a fixed number of
     * values: a cell takes the pages its stored values need, chained, and gives them back when drawn, so there is
     * no fragmentation beyond the unused end of each cell's last page. Readers copy a chunk's CSR into its pages
     * (through a small staging area per thread, so a chunk needs no contiguous room), and a drawn cell is densified
     * straight into the batch: one pass over the batch row instead of densifying into the buffer and copying out.
     *
     * <p>The pages are sized for the worst the stream can hold: the slots' worth of the file's cells with the most
     * pages. So a read never waits for room, and the draws are exactly those of a dense buffer of the same slots.
     */
    final class Sparse implements ShuffleBuffer {
        /** Page sizes tried, in values; the largest whose bound stays within 1/16 of the exact one is taken. */
        private static final int MIN_PAGE = 4;
        private static final int MAX_PAGE = 1024;
        /** Values staged per reader at most (unless one cell has more): 512 KiB, about a core's L2 cache. */
        private static final long STAGING_VALUES = 1 << 16;

        private final long genes;
        private final long rowBytes;
        private final int pageValues;
        private final long pageBytes;
        private final int pages;
        private final MemorySegment store;
        private final AnnData cellCounts;
        /** Per epoch, touched by the caller's thread only: page chains (-1 ends one), the free chain, each slot's cell. */
        private final int[] next;
        private int freePages;
        private final int[] slotPage;
        private final int[] slotValues;
        private final ConcurrentLinkedQueue<Staging> staging = new ConcurrentLinkedQueue<>();
        private final long stagingBytes;

        /** Room for one reader's part of a chunk as stored. */
        private record Staging(MemorySegment values, MemorySegment columns, long[] rowStarts) {
        }

        private Sparse(Arena arena, Plan plan, int slots, int threads, int chunkSize, AnnData cellCounts) {
            this.genes = cellCounts.variables();
            this.rowBytes = genes * Float.BYTES;
            this.pageValues = plan.pageValues();
            this.pageBytes = (long) pageValues * (Float.BYTES + Integer.BYTES);
            this.pages = plan.pages();
            this.cellCounts = cellCounts;
            this.store = arena.allocate(Math.max(1, pages * pageBytes), 64);
            this.next = new int[pages];
            this.slotPage = new int[slots];
            this.slotValues = new int[slots];
            long stagedValues = plan.stagingValues();
            for (int t = 0; t < threads; t++) {
                staging.add(new Staging(arena.allocate(Math.max(4, stagedValues * Float.BYTES), 64),
                        arena.allocate(Math.max(4, stagedValues * Integer.BYTES), 64), new long[chunkSize + 1]));
            }
            this.stagingBytes = threads * stagedValues * (Float.BYTES + Integer.BYTES);
        }

        /**
         * The paged layout for a sparse X, or null when it would not take less memory than dense rows (or X cannot
         * be read as CSR with int32 columns).
         *
         * @param cellCounts an open reader of the file, kept by the buffer (to size each chunk's cells at reserve)
         * @param file the file, for messages
         */
        static Sparse planned(Arena arena, AnnData cellCounts, Path file, int slots, int threads, int chunkSize) {
            Plan plan = plan(cellCounts, file, slots, chunkSize);
            if (plan == null || plan.bytes(threads) >= Dense.bytes(slots, cellCounts.variables())) {
                return null;
            }
            return new Sparse(arena, plan, slots, threads, chunkSize, cellCounts);
        }

        /** A page size, the pages the stream can need at most, and the values a reader stages at once. */
        record Plan(int pageValues, int pages, long stagingValues) {
            long bytes(int threads) {
                return pages * (long) pageValues * (Float.BYTES + Integer.BYTES)
                        + threads * stagingValues * (Float.BYTES + Integer.BYTES);
            }
        }

        static Plan plan(AnnData h5ad, Path file, int slots, int chunkSize) {
            if (!h5ad.sparse() || h5ad.variables() > Integer.MAX_VALUE) {
                return null;
            }
            long cells = h5ad.observations();
            int maxCell = 0;
            long maxChunk = 0;
            for (long first = 0; first < cells; first += chunkSize) {
                maxChunk = Math.max(maxChunk, h5ad.storedValues(first, Math.min(chunkSize, cells - first)));
            }
            for (long cell = 0; cell < cells; cell++) {
                maxCell = Math.max(maxCell, (int) h5ad.storedValues(cell, 1));
            }
            // cells by their stored values, to sum the most the stream can hold: its slots' worth of the fullest cells
            long[] cellsWith = new long[maxCell + 1];
            for (long cell = 0; cell < cells; cell++) {
                cellsWith[(int) h5ad.storedValues(cell, 1)]++;
            }
            long exact = fullest(cellsWith, slots, 1);
            int page = MIN_PAGE;
            for (int candidate = MIN_PAGE * 2; candidate <= MAX_PAGE; candidate *= 2) {
                if (fullest(cellsWith, slots, candidate) * candidate <= exact + exact / 16) {
                    page = candidate;
                }
            }
            long pages = fullest(cellsWith, slots, page);
            if (pages > Integer.MAX_VALUE - 8) {
                throw new MemfitException("streaming " + file + ": a shuffle buffer of " + slots + " cells needs " + pages
                        + " pages of " + page + " values; lower the buffer or the chunk size");
            }
            // a window a reader copies a chunk through: the fullest cell at least, an eighth of the fullest chunk (so a
            // small file does not pay a chunk per thread) up to STAGING_VALUES
            long staged = Math.max(1, Math.max(maxCell, Math.min(maxChunk, Math.min(STAGING_VALUES, Math.max(1024, maxChunk / 8)))));
            return new Plan(page, (int) pages, staged);
        }

        /** The pages of {@code page} values that the {@code slots} cells needing the most of them need. */
        private static long fullest(long[] cellsWith, int slots, int page) {
            long left = slots;
            long total = 0;
            for (int values = cellsWith.length - 1; values >= 0 && left > 0; values--) {
                long taken = Math.min(left, cellsWith[values]);
                total += taken * ((values + page - 1) / page);
                left -= taken;
            }
            return total;
        }

        int pageValues() {
            return pageValues;
        }

        @Override
        public long bytes() {
            return pages * pageBytes + stagingBytes;
        }

        @Override
        public void startEpoch() {
            for (int p = 0; p < pages; p++) {
                next[p] = p + 1 < pages ? p + 1 : -1;
            }
            freePages = pages > 0 ? 0 : -1;
        }

        @Override
        public void reserve(long first, int[] slots) {
            for (int i = 0; i < slots.length; i++) {
                int values = (int) cellCounts.storedValues(first + i, 1);
                int slot = slots[i];
                slotValues[slot] = values;
                slotPage[slot] = -1;
                if (values == 0) {
                    continue;
                }
                // take the cell's pages off the front of the free chain and cut the chain after the last
                int head = freePages;
                int last = head;
                for (int n = (values - 1) / pageValues; n > 0 && last >= 0; n--) {
                    last = next[last];
                }
                if (last < 0) {
                    throw new IllegalStateException("shuffle buffer pages exhausted: the bound of " + pages + " pages is wrong");
                }
                freePages = next[last];
                next[last] = -1;
                slotPage[slot] = head;
            }
        }

        @Override
        public void read(AnnData h5ad, long first, int[] slots) {
            Staging area = staging.poll();
            try {
                long capacity = area.values().byteSize() / Float.BYTES;
                int count = slots.length;
                for (int from = 0; from < count; ) {
                    // as many whole cells as the staging area holds (at least one: it holds the fullest cell)
                    int to = from + 1;
                    long values = h5ad.storedValues(first + from, 1);
                    while (to < count) {
                        long more = h5ad.storedValues(first + to, 1);
                        if (values + more > capacity) {
                            break;
                        }
                        values += more;
                        to++;
                    }
                    long[] starts = area.rowStarts();
                    h5ad.readCsr(first + from, to - from, area.values(), area.columns(), starts);
                    for (int i = from; i < to; i++) {
                        int slot = slots[i];
                        long start = starts[i - from];
                        int page = slotPage[slot];
                        for (int done = 0, length = slotValues[slot]; done < length; done += pageValues) {
                            long piece = (long) Math.min(pageValues, length - done) * Float.BYTES;
                            long at = page * pageBytes;
                            MemorySegment.copy(area.values(), (start + done) * Float.BYTES, store, at, piece);
                            MemorySegment.copy(area.columns(), (start + done) * Integer.BYTES, store,
                                    at + (long) pageValues * Float.BYTES, piece);
                            page = next[page];
                        }
                    }
                    from = to;
                }
            } finally {
                staging.add(area);
            }
        }

        @Override
        public void emit(int slot, MemorySegment out, long offset) {
            // zero the row just before its values go in, while it is in cache
            out.asSlice(offset, rowBytes).fill((byte) 0);
            int length = slotValues[slot];
            if (length == 0) {
                return;
            }
            MemorySegment store = this.store;
            long columnsAt = (long) pageValues * Float.BYTES;
            int page = slotPage[slot];
            int last = page;
            for (int done = 0; done < length; done += pageValues) {
                long at = page * pageBytes;
                int n = Math.min(pageValues, length - done);
                for (int j = 0; j < n; j++) {
                    int column = store.get(ValueLayout.JAVA_INT, at + columnsAt + (long) j * Integer.BYTES);
                    // added, not set: a gene stored twice in a cell counts twice (as scipy's toarray())
                    long target = offset + (long) column * Float.BYTES;
                    out.set(ValueLayout.JAVA_FLOAT, target, out.get(ValueLayout.JAVA_FLOAT, target)
                            + store.get(ValueLayout.JAVA_FLOAT, at + (long) j * Float.BYTES));
                }
                last = page;
                page = next[page];
            }
            // the whole chain back on the free chain
            next[last] = freePages;
            freePages = slotPage[slot];
        }
    }
}
