package dev.memfit.data;

import ai.djl.ndarray.types.Shape;
import dev.memfit.MemfitException;
import dev.memfit.Threads;
import dev.memfit.DType;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.NativeMemory;
import dev.memfit.sample.ShuffledSampler;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Streams an {@code .h5ad} in chunks of consecutive cells through a shuffle buffer: chunks are read in a per-epoch
 * random order on {@code threads} threads (each with its own file handle), and batches are drawn at random from the
 * cells in the buffer. Every cell is yielded once per epoch; the order differs every epoch (from the seed and the
 * epoch); memory is the buffer (with room for the chunks being read ahead, which readers write straight into free
 * slots) and two batches, whatever the file size.
 */
public final class H5adStream implements AutoCloseable {

    private static final AtomicInteger POOL_ID = new AtomicInteger();

    private final Path file;
    private final long cells;
    private final long genes;
    private final int chunkSize;
    private final int bufferCells;
    private final int batchSize;
    private final long seed;
    private final int threads;
    private final ExecutorService pool;
    private final List<H5ad> handles = new ArrayList<>();
    private final ThreadLocal<H5ad> handle;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment buffer;
    private final ConcurrentLinkedDeque<MemorySegment> batchBuffers = new ConcurrentLinkedDeque<>();
    private final int slots;
    private final NativeMemory.Reservation reservation;
    private EpochIterator active;

    private H5adStream(Path file, int chunkSize, int bufferCells, int batchSize, int threads, long seed) {
        try (H5ad probe = H5ad.open(file)) {
            this.cells = probe.observations();
            this.genes = probe.variables();
        }
        if (chunkSize < 1 || bufferCells < chunkSize || batchSize < 1 || threads < 1) {
            throw new MemfitException("need chunk size >= 1, shuffle buffer >= chunk size, batch size >= 1 and threads >= 1;"
                    + " got chunk " + chunkSize + ", buffer " + bufferCells + ", batch " + batchSize + ", threads " + threads);
        }
        this.file = file;
        this.chunkSize = chunkSize;
        this.bufferCells = bufferCells;
        this.batchSize = batchSize;
        this.seed = seed;
        this.threads = threads;
        this.pool = Executors.newFixedThreadPool(threads, Threads.daemon("memfit-stream-" + POOL_ID.incrementAndGet()));
        this.handle = ThreadLocal.withInitial(() -> {
            H5ad opened = H5ad.open(file);
            synchronized (handles) {
                handles.add(opened);
            }
            return opened;
        });
        long rowBytes = genes * Float.BYTES;
        // the shuffle buffer's slots plus room for the chunks being read ahead, which readers fill in place
        this.slots = Math.addExact(bufferCells, Math.multiplyExact(readDepth(), chunkSize));
        this.buffer = arena.allocate(Math.max(1, slots * rowBytes), 64);
        for (int i = 0; i < 2; i++) {
            batchBuffers.add(arena.allocate(Math.max(1, batchSize * rowBytes), 64));
        }
        this.reservation = NativeMemory.ALLOCATED.reserve(bufferMemory());
    }

    /** Chunks read ahead: one per reader thread, at least two so that a read overlaps the buffer's draws. */
    private int readDepth() {
        return Math.max(2, threads);
    }

    /**
     * Starts configuring a stream over an {@code .h5ad} (also {@link Datasets#h5ad}).
     *
     * @param file the {@code .h5ad}
     * @return the builder
     */
    public static Builder builder(Path file) {
        return new Builder(file);
    }

    /**
     * Configures an {@link H5adStream}. Defaults: chunks of 10,000 cells, a shuffle buffer of four chunks, batches of
     * 256, one reader thread, seed 0.
     */
    public static final class Builder {
        private final Path file;
        private int chunkSize = 10_000;
        private Integer bufferCells;
        private int batchSize = 256;
        private int threads = 1;
        private long seed;

        private Builder(Path file) {
            this.file = file;
        }

        /**
         * Sets the cells read at once: consecutive cells of the file, in one read.
         *
         * @param cells at least 1
         * @return this builder
         */
        public Builder optChunkSize(int cells) {
            this.chunkSize = cells;
            return this;
        }

        /**
         * Sets the cells held in the shuffle buffer, which batches are drawn from at random.
         *
         * @param cells at least one chunk
         * @return this builder
         */
        public Builder optBufferCells(int cells) {
            this.bufferCells = cells;
            return this;
        }

        /**
         * Sets the cells per batch.
         *
         * @param size at least 1
         * @return this builder
         */
        public Builder optBatchSize(int size) {
            this.batchSize = size;
            return this;
        }

        /**
         * Sets the chunk reads done at once, each on its own thread and file handle.
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder optThreads(int count) {
            this.threads = count;
            return this;
        }

        /**
         * Sets the seed of the chunk order and of the draws; with the epoch it fixes the order, whatever the threads.
         *
         * @param seed the seed
         * @return this builder
         */
        public Builder optShuffle(long seed) {
            this.seed = seed;
            return this;
        }

        /**
         * Validates the settings, opens the file and starts the reader threads.
         *
         * @return the stream, to be closed
         */
        public H5adStream build() {
            return new H5adStream(file, chunkSize, bufferCells == null ? 4 * chunkSize : bufferCells, batchSize, threads, seed);
        }
    }

    /**
     * The shape of one cell: the number of genes.
     *
     * @return the shape
     */
    public Shape sampleShape() {
        return new Shape(genes);
    }

    /**
     * The number of cells.
     *
     * @return n_obs
     */
    public long size() {
        return cells;
    }

    /**
     * The native memory the stream holds: the shuffle buffer, the chunks being read ahead and two batch buffers.
     *
     * @return bytes
     */
    public long bufferMemory() {
        long rowBytes = genes * Float.BYTES;
        return bufferCells * rowBytes + (long) readDepth() * chunkSize * rowBytes + 2L * batchSize * rowBytes;
    }

    /**
     * The batches of one epoch, every cell once. One epoch at a time.
     *
     * @param epoch the epoch, which with the seed fixes the order
     * @return the batches
     */
    public Iterable<Batch> epoch(long epoch) {
        return () -> new EpochIterator(epoch);
    }

    /** A chunk being read straight into reserved slots of the buffer. */
    private record Pending(Future<?> read, long first, int[] slots) {
    }

    private final class EpochIterator implements Iterator<Batch> {
        private final long epoch;
        private final long[] chunkOrder;
        private final ArrayDeque<Pending> inFlight = new ArrayDeque<>();
        private final SplittableRandom random;
        private final long[] slotCell;
        /** Buffer slots holding rows not yet drawn (first {@code live} entries) and free slots (a stack). */
        private final int[] liveSlots;
        private final int[] freeSlots;
        private int free;
        private int nextChunk;
        private int live;
        private long returned;
        private long number;
        private Batch current;

        EpochIterator(long epoch) {
            this.epoch = epoch;
            long chunks = (cells + chunkSize - 1) / chunkSize;
            this.chunkOrder = new ShuffledSampler(chunks, seed).indices(epoch);
            this.random = ShuffledSampler.random(seed ^ 0x2545F4914F6CDD1DL, epoch);
            if (active != null) {
                active.abandon();
            }
            active = this;
            this.slotCell = new long[slots];
            this.liveSlots = new int[slots];
            this.freeSlots = new int[slots];
            for (int slot = slots - 1; slot >= 0; slot--) {
                freeSlots[free++] = slot;
            }
            submitReads();
        }

        /** Starts reads of the next chunks while slots are free for them (the slots are reserved until absorbed). */
        private void submitReads() {
            long rowBytes = genes * Float.BYTES;
            while (inFlight.size() < readDepth() && nextChunk < chunkOrder.length && free >= chunkSize) {
                long first = chunkOrder[nextChunk++] * chunkSize;
                int count = (int) Math.min(chunkSize, cells - first);
                int[] reserved = new int[count];
                long[] offsets = new long[count];
                for (int i = 0; i < count; i++) {
                    reserved[i] = freeSlots[--free];
                    offsets[i] = reserved[i] * rowBytes;
                }
                inFlight.add(new Pending(pool.submit(() -> handle.get().readRows(first, count, buffer, offsets)), first, reserved));
            }
        }

        /**
         * Makes read chunks live while a whole chunk fits under the buffer size: waits on the oldest read, so which rows
         * are live at each draw depends only on the seed and epoch, never on how fast the readers are.
         */
        private void refill() {
            while (!inFlight.isEmpty() && live + chunkSize <= bufferCells) {
                Pending chunk = inFlight.poll();
                try {
                    chunk.read().get();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new MemfitException("interrupted while streaming " + file, e);
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof RuntimeException runtime ? runtime
                            : new MemfitException("streaming " + file + " failed: " + e.getCause(), e.getCause());
                }
                for (int i = 0; i < chunk.slots().length; i++) {
                    int slot = chunk.slots()[i];
                    slotCell[slot] = chunk.first() + i;
                    liveSlots[live++] = slot;
                }
                submitReads();
            }
        }

        /** Waits for the reads still in flight when an epoch is left early: they write into the shared buffer. */
        private void abandon() {
            for (Pending pending : inFlight) {
                try {
                    pending.read().get();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new MemfitException("interrupted while streaming " + file, e);
                } catch (ExecutionException e) {
                    // the read failed; this epoch is being left anyway
                }
            }
            inFlight.clear();
            if (current != null) {
                current.close();
                current = null;
            }
        }

        @Override
        public boolean hasNext() {
            return returned < cells;
        }

        @Override
        public Batch next() {
            if (!hasNext()) {
                throw new NoSuchElementException("epoch " + epoch + " of " + file + " is over");
            }
            if (current != null) {
                current.close();
            }
            refill();
            long rowBytes = genes * Float.BYTES;
            int size = (int) Math.min(batchSize, live);
            MemorySegment out = batchBuffers.pollFirst();
            long[] indices = new long[size];
            for (int i = 0; i < size; i++) {
                int drawn = random.nextInt(live);
                int slot = liveSlots[drawn];
                indices[i] = slotCell[slot];
                MemorySegment.copy(buffer, slot * rowBytes, out, i * rowBytes, rowBytes);
                // swap-remove the slot's index (not its row) and free the slot for the next chunk
                liveSlots[drawn] = liveSlots[--live];
                freeSlots[free++] = slot;
            }
            submitReads();
            returned += size;
            current = new Batch(epoch, number++, indices, out, out.asSlice(0, size * rowBytes), new Shape(size, genes),
                    DType.FLOAT32, batchBuffers::addFirst);
            return current;
        }
    }

    /** Stops the readers and frees the buffers and file handles. */
    @Override
    public void close() {
        pool.shutdownNow();
        arena.close();
        reservation.close();
        synchronized (handles) {
            handles.forEach(H5ad::close);
            handles.clear();
        }
    }
}
