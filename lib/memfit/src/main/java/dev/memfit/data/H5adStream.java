package dev.memfit.data;

import ai.djl.ndarray.types.Shape;
import dev.memfit.MemfitException;
import dev.memfit.Threads;
import dev.memfit.DType;
import dev.memfit.io.AnnDataFiles;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.storage.Storage;
import dev.memfit.NativeMemory;
import dev.memfit.sample.ShuffledSampler;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
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
 * The streaming {@link Loader} over AnnData (an {@code .h5ad}, a {@code .zarr} folder or {@code .zarr.zip}, local or a
 * store in a bucket read chunk by chunk through an object cache): chunks of consecutive cells are read in a per-epoch random order
 * on {@code threads} threads (each with its own file handle), and batches are drawn at random from the cells in a
 * shuffle buffer. Every cell is yielded once per epoch; the order differs every epoch (from the seed and the epoch) and
 * does not depend on the number of threads; memory is the buffer (with room for the chunks being read ahead, which
 * readers write straight into free slots) and two batches, whatever the file size. Configured by
 * {@link H5adStreamBuilder}.
 *
 * <p>For a sparse X the buffer holds cells as stored, in pages ({@link ShuffleBuffer.Sparse}), and a drawn cell is
 * densified straight into its batch; for a dense X (or a sparse one too dense to save memory that way) it holds dense
 * rows. Either way the slots, and so the order of the cells, are the same.
 */
final class H5adStream implements Loader.Pipeline {

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
    private final List<AnnData> handles = new ArrayList<>();
    private final ThreadLocal<AnnData> handle;
    private final Arena arena = Arena.ofShared();
    private final ShuffleBuffer buffer;
    /** Kept open for a sparse buffer, which sizes each chunk's cells with it; null otherwise. */
    private final AnnData probe;
    private final ConcurrentLinkedDeque<MemorySegment> batchBuffers = new ConcurrentLinkedDeque<>();
    private final int slots;
    private final NativeMemory.Reservation reservation;
    private final boolean dropLast;
    private final int prefetch;
    /** The matrix read: X, raw/X or layers/NAME. */
    private final String layer;
    /** Whether the file's X is float64, which the stream's float32 batches round. */
    private final boolean float64;
    /** What descriptions name: the file's name, or the object's address when the file is a staged object. */
    private String name;
    /** Closed with the stream: the pin and cache of a staged object; null for a local file. */
    private AutoCloseable staging;

    H5adStream(Path file, int chunkSize, int bufferCells, int batchSize, int threads, int prefetch, long seed,
               boolean dropLast) {
        this(file, null, chunkSize, bufferCells, batchSize, threads, prefetch, seed, dropLast, true, "X");
    }

    /**
     * As above; {@code sparseAllowed} false keeps dense rows in the buffer whatever X is (tests compare the two);
     * {@code layer} is the matrix read ({@link AnnDataFiles.Builder#optLayer}); {@code storage} reads a zarr store in a
     * bucket (the caller keeps it open), null for local files.
     */
    H5adStream(Path file, Storage storage, int chunkSize, int bufferCells, int batchSize, int threads, int prefetch,
               long seed, boolean dropLast, boolean sparseAllowed, String layer) {
        AnnData reader = AnnDataFiles.builder().setFile(file).optStorage(storage).optLayer(layer).open();
        this.cells = reader.observations();
        this.genes = reader.variables();
        if (chunkSize < 1 || bufferCells < chunkSize || batchSize < 1 || batchSize > bufferCells || threads < 1
                || prefetch < 1) {
            reader.close();
            throw new MemfitException("streaming " + file + " needs chunk size >= 1, shuffle buffer >= chunk size,"
                    + " 1 <= batch size <= shuffle buffer, threads >= 1 and prefetch >= 1 chunk; got chunk " + chunkSize
                    + ", buffer " + bufferCells + ", batch " + batchSize + ", threads " + threads + ", prefetch " + prefetch);
        }
        this.file = file;
        this.chunkSize = chunkSize;
        this.bufferCells = bufferCells;
        this.batchSize = batchSize;
        this.seed = seed;
        this.threads = threads;
        this.dropLast = dropLast;
        this.prefetch = prefetch;
        this.name = file.getFileName().toString();
        this.layer = reader.layer();
        this.float64 = reader.storedType() == DType.FLOAT64;
        this.slots = Math.addExact(bufferCells, Math.multiplyExact(prefetch, chunkSize));
        ShuffleBuffer.Sparse sparse;
        try {
            sparse = sparseAllowed ? ShuffleBuffer.Sparse.planned(arena, reader, file, slots, threads, chunkSize) : null;
        } catch (RuntimeException e) {
            reader.close();
            arena.close();
            throw e;
        }
        if (sparse == null) {
            reader.close();
            this.probe = null;
            this.buffer = new ShuffleBuffer.Dense(arena, slots, genes);
        } else {
            this.probe = reader;
            this.buffer = sparse;
        }
        this.pool = Executors.newFixedThreadPool(threads, Threads.daemon("memfit-stream-" + POOL_ID.incrementAndGet()));
        this.handle = ThreadLocal.withInitial(() -> {
            AnnData opened = AnnDataFiles.builder().setFile(file).optStorage(storage).optLayer(layer).open();
            synchronized (handles) {
                handles.add(opened);
            }
            return opened;
        });
        long rowBytes = genes * Float.BYTES;
        for (int i = 0; i < 2; i++) {
            batchBuffers.add(arena.allocate(Math.max(1, batchSize * rowBytes), 64));
        }
        this.reservation = NativeMemory.ALLOCATED.reserve(bufferMemory());
    }

    /**
     * Marks the file as the local copy of an object: descriptions name the object, and {@code resources} (its pin
     * and, when the loader owns it, the cache) are closed with the stream.
     */
    H5adStream stagedFrom(String object, AutoCloseable resources) {
        this.name = object;
        this.staging = resources;
        return this;
    }

    /** Chunks read ahead, each into slots of its own. */
    private int readDepth() {
        return prefetch;
    }

    @Override
    public Shape sampleShape() {
        return new Shape(genes);
    }

    @Override
    public long samples() {
        return cells;
    }

    @Override
    public String describe() {
        return "stream of " + name + (layer.equals("X") ? "" : " " + layer) + " (" + cells + " cells x " + genes + " genes, chunks of " + chunkSize
                + ", shuffle buffer " + bufferCells + ", " + threads + (threads == 1 ? " thread" : " threads")
                // a stream gives float32 batches: say so when the file holds more
                + (float64 ? ", float64 X read as float32)" : ")");
    }

    @Override
    public int batchSize() {
        return batchSize;
    }

    @Override
    public long batchesPerEpoch() {
        return dropLast ? cells / batchSize : (cells + batchSize - 1) / batchSize;
    }

    @Override
    public DType outputType() {
        return DType.FLOAT32;
    }

    /**
     * The shuffle buffer with room for the chunks being read ahead, and two batch buffers. For a sparse X the buffer
     * holds cells as stored, sized for the fullest cells of the file (see {@link ShuffleBuffer.Sparse}).
     */
    @Override
    public long bufferMemory() {
        return buffer.bytes() + 2L * batchSize * genes * Float.BYTES;
    }

    /** The values per page of a sparse shuffle buffer; 0 when it holds dense rows. */
    int sparsePageValues() {
        return buffer instanceof ShuffleBuffer.Sparse sparse ? sparse.pageValues() : 0;
    }

    @Override
    public String fingerprint() {
        return name + (layer.equals("X") ? "" : " " + layer) + " (" + cells + " cells x " + genes + " genes)";
    }

    @Override
    public String orderSettings() {
        return "stream: chunks of " + chunkSize + ", shuffle buffer " + bufferCells + ", seed " + seed;
    }

    @Override
    public boolean dropLast() {
        return dropLast;
    }

    /**
     * Starts an epoch at one of its batches. Inside an epoch the shuffle buffer's contents depend on every chunk read
     * and every cell drawn before, but all of that is a function of the seed, the epoch and the settings: so the
     * epoch's chunk order and draws are replayed on cell indices alone (nothing is read) up to {@code firstBatch},
     * then the cells the buffer holds at that point and the chunks in flight are read, and the epoch continues as an
     * uninterrupted one would, cell for cell. The replay costs a few integer operations per cell skipped, once per
     * resume: about 0.08 s for a whole epoch of 10 million cells (a noisy smoke run on a shared core,
     * {@code H5adStreamResumeTest#replaySmoke}), so it does not matter next to a training step.
     */
    @Override
    public Loader.Epoch start(long epoch, long firstBatch) {
        return new EpochIterator(epoch, firstBatch);
    }

    @Override
    public String toString() {
        return describe() + ", batch " + batchSize + ", seed " + seed;
    }

    /** A chunk being read straight into reserved slots of the buffer. */
    private record Pending(Future<?> read, long first, int[] slots) {
    }

    private final class EpochIterator implements Loader.Epoch {
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
        private final long batches;
        private long returned;
        private long number;
        private Batch current;
        /** While replaying the batches before a resume point: bookkeeping on cell indices only, no reads. */
        private boolean replaying;

        EpochIterator(long epoch, long firstBatch) {
            this.epoch = epoch;
            long chunks = (cells + chunkSize - 1) / chunkSize;
            this.chunkOrder = new ShuffledSampler(chunks, seed).indices(epoch);
            this.random = ShuffledSampler.random(seed ^ 0x2545F4914F6CDD1DL, epoch);
            this.batches = batchesPerEpoch();
            this.slotCell = new long[slots];
            this.liveSlots = new int[slots];
            this.freeSlots = new int[slots];
            for (int slot = slots - 1; slot >= 0; slot--) {
                freeSlots[free++] = slot;
            }
            buffer.startEpoch();
            if (firstBatch >= batches) {
                number = batches;       // a finished epoch: nothing left to hand out or read
                return;
            }
            replaying = firstBatch > 0;
            submitReads();
            if (replaying) {
                while (number < firstBatch) {
                    int size = (int) Math.min(batchSize, cells - returned);
                    refill(size);
                    draw(size, null, null);
                    returned += size;
                    number++;
                }
                replaying = false;
                readBackBuffer();
            }
        }

        /**
         * After a replay: reads the cells the buffer holds (in runs of consecutive cells, ascending, so that a
         * compressed file's decoded chunks serve the neighbours; split among the reader threads), then submits the
         * reads of the chunks in flight, into the slots the replay gave them. Boxes the live slots to sort them: once
         * per resume, a buffer's worth.
         */
        private void readBackBuffer() {
            Integer[] byCell = new Integer[live];
            for (int i = 0; i < live; i++) {
                byCell[i] = liveSlots[i];
            }
            java.util.Arrays.sort(byCell, java.util.Comparator.comparingLong(slot -> slotCell[slot]));
            List<Pending> runs = new ArrayList<>();
            for (int from = 0; from < live; ) {
                int to = from + 1;
                while (to < live && slotCell[byCell[to]] == slotCell[byCell[to - 1]] + 1) {
                    to++;
                }
                int[] runSlots = new int[to - from];
                for (int i = from; i < to; i++) {
                    runSlots[i - from] = byCell[i];
                }
                long first = slotCell[runSlots[0]];
                buffer.reserve(first, runSlots);
                runs.add(new Pending(null, first, runSlots));
                from = to;
            }
            List<Future<?>> reads = new ArrayList<>();
            int perTask = Math.max(1, (runs.size() + threads - 1) / threads);
            for (int from = 0; from < runs.size(); from += perTask) {
                List<Pending> part = runs.subList(from, Math.min(runs.size(), from + perTask));
                reads.add(pool.submit(() -> {
                    for (Pending run : part) {
                        buffer.read(handle.get(), run.first(), run.slots());
                    }
                }));
            }
            // every read finished before failing: none may still write into the buffer when the epoch is given up
            RuntimeException failed = null;
            for (Future<?> read : reads) {
                try {
                    await(read);
                } catch (RuntimeException e) {
                    failed = failed == null ? e : failed;
                }
            }
            if (failed != null) {
                throw failed;
            }
            List<Pending> replayed = new ArrayList<>(inFlight);
            inFlight.clear();
            for (Pending chunk : replayed) {
                buffer.reserve(chunk.first(), chunk.slots());
                inFlight.add(new Pending(pool.submit(() -> buffer.read(handle.get(), chunk.first(), chunk.slots())),
                        chunk.first(), chunk.slots()));
            }
        }

        private void await(Future<?> read) {
            try {
                read.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new MemfitException("interrupted while streaming " + file, e);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof RuntimeException runtime ? runtime
                        : new MemfitException("streaming " + file + " failed: " + e.getCause(), e.getCause());
            }
        }

        /** Starts reads of the next chunks while slots are free for them (the slots are reserved until absorbed). */
        private void submitReads() {
            while (inFlight.size() < readDepth() && nextChunk < chunkOrder.length && free >= chunkSize) {
                long first = chunkOrder[nextChunk++] * chunkSize;
                int count = (int) Math.min(chunkSize, cells - first);
                int[] reserved = new int[count];
                for (int i = 0; i < count; i++) {
                    reserved[i] = freeSlots[--free];
                }
                if (replaying) {
                    inFlight.add(new Pending(null, first, reserved));
                } else {
                    buffer.reserve(first, reserved);
                    inFlight.add(new Pending(pool.submit(() -> buffer.read(handle.get(), first, reserved)), first, reserved));
                }
            }
        }

        /**
         * Makes read chunks live while a whole chunk fits under the buffer size, or while fewer cells are live than the
         * next batch needs (so every batch but an epoch's last has exactly the batch size). Waits on the oldest read, so
         * which rows are live at each draw depends only on the seed and epoch, never on how fast the readers are.
         */
        private void refill(int needed) {
            while (!inFlight.isEmpty() && (live + chunkSize <= bufferCells || live < needed)) {
                Pending chunk = inFlight.poll();
                if (chunk.read() != null) {     // null: replayed, never read
                    await(chunk.read());
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
        @Override
        public void abandon() {
            for (Pending pending : inFlight) {
                if (pending.read() == null) {
                    continue;
                }
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
        public long position() {
            return number;
        }

        @Override
        public boolean hasNext() {
            return number < batches;
        }

        /**
         * Draws a batch's cells from the refilled buffer and writes them into {@code out}, or, replaying ({@code out}
         * null), makes the same draws on indices only.
         */
        private void draw(int size, long[] indices, MemorySegment out) {
            long rowBytes = genes * Float.BYTES;
            for (int i = 0; i < size; i++) {
                int drawn = random.nextInt(live);
                int slot = liveSlots[drawn];
                if (out != null) {
                    indices[i] = slotCell[slot];
                    buffer.emit(slot, out, i * rowBytes);
                }
                // swap-remove the slot's index (not its row) and free the slot for the next chunk
                liveSlots[drawn] = liveSlots[--live];
                freeSlots[free++] = slot;
            }
            submitReads();
        }

        @Override
        public Batch next() {
            if (!hasNext()) {
                throw new NoSuchElementException("epoch " + epoch + " of " + file + " is over");
            }
            if (current != null) {
                current.close();
            }
            int size = (int) Math.min(batchSize, cells - returned);
            refill(size);
            MemorySegment out = batchBuffers.pollFirst();
            long[] indices = new long[size];
            draw(size, indices, out);
            returned += size;
            long rowBytes = genes * Float.BYTES;
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
        if (probe != null) {
            probe.close();
        }
        reservation.close();
        synchronized (handles) {
            handles.forEach(AnnData::close);
            handles.clear();
        }
        if (staging != null) {
            try {
                staging.close();
            } catch (Exception e) {
                throw new MemfitException("closing the cache of " + name + " failed: " + e.getMessage(), e);
            }
        }
    }
}
