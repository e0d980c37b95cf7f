package dev.memfit.data;

import dev.memfit.source.SampleSource;
import ai.djl.ndarray.types.Shape;
import dev.memfit.MemfitException;
import dev.memfit.Threads;
import dev.memfit.DType;
import dev.memfit.NativeMemory;
import dev.memfit.sample.SampleOrder;
import dev.memfit.sample.Sampler;

import dev.memfit.PinnedMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import dev.memfit.source.SparseRows;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.FutureTask;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The random-access {@link Loader}: a {@link Sampler} orders the samples, and batches of them are read from the
 * {@link SampleSource} into reused off-heap buffers on background threads, {@code max(1, prefetch)} batches ahead
 * ({@code threads == 0}: on the caller's thread when it asks, into one buffer).
 *
 * <p>The caller helps: when the batch it asks for has not been started by a reader yet, it reads that batch itself
 * instead of waiting for a reader to pick it up, and while a reader is still on it, the caller reads the next batches
 * nobody has started. A consumer that would otherwise sit idle adds its thread to the readers (with {@code threads == 0}
 * it is the only one); a consumer busy training finds its batches ready and never reads.
 */
final class RandomAccessPipeline implements Loader.Pipeline {

    private static final AtomicInteger POOL_ID = new AtomicInteger();

    private final SampleSource source;
    private final boolean ownsSource;
    private final Sampler sampler;
    private final int batchSize;
    private final boolean dropLast;
    private final int prefetch;
    private final int threads;
    private final DType outputType;
    private final ExecutorService pool;
    /** Each buffer's own arena (by the buffer's address): a sparse batch larger than its buffer replaces it. */
    private final Map<Long, Arena> arenas = new ConcurrentHashMap<>();
    private final Map<Long, NativeMemory.Reservation> reservations = new ConcurrentHashMap<>();
    private final ConcurrentLinkedDeque<MemorySegment> freeBuffers = new ConcurrentLinkedDeque<>();
    private final List<MemorySegment> buffers = new ArrayList<>();
    private final Map<Long, PinnedMemory.Pin> pins = new HashMap<>();
    private boolean pinned;
    private volatile boolean closed;
    /** The source's rows as CSR, for sparse batches; null for dense ones. */
    private final SparseRows sparse;

    RandomAccessPipeline(SampleSource source, boolean ownsSource, Sampler sampler, int batchSize, boolean dropLast, int prefetch,
           int threads, DType outputType, boolean sparseBatches) {
        this.source = source;
        this.ownsSource = ownsSource;
        this.sampler = sampler;
        this.batchSize = batchSize;
        this.dropLast = dropLast;
        this.prefetch = prefetch;
        this.threads = threads;
        this.outputType = outputType;
        this.sparse = sparseBatches ? sparseRowsOf(source) : null;
        this.pool = threads == 0 ? null
                : Executors.newFixedThreadPool(threads, Threads.daemon("memfit-loader-" + POOL_ID.incrementAndGet()));
        long bufferBytes = bufferBytes(source, batchSize, outputType, sparseBatches);
        int count = bufferCount();
        for (int i = 0; i < count; i++) {
            MemorySegment buffer = allocate(bufferBytes);
            this.buffers.add(buffer);
            freeBuffers.add(buffer);
        }
    }

    /** The rows of a source as CSR, or a refusal naming the source. */
    static SparseRows sparseRowsOf(SampleSource source) {
        if (source.sampleShape().dimension() != 1) {
            throw new MemfitException("sparse batches are rows of one dimension; " + source.describe() + " has samples of "
                    + source.sampleShape());
        }
        return source.sparseRows().orElseThrow(() -> new MemfitException("sparse batches (optSparseBatches): "
                + source.describe() + " hands its samples over dense only (a dense matrix, or shards in a bucket); "
                + "leave optSparseBatches off, or read a CSR/CSC matrix or local sparse shards"));
    }

    private MemorySegment allocate(long bytes) {
        Arena arena = Arena.ofShared();
        MemorySegment buffer = arena.allocate(Math.max(1, bytes), 64);
        arenas.put(buffer.address(), arena);
        reservations.put(buffer.address(), NativeMemory.ALLOCATED.reserve(buffer.byteSize()));
        return buffer;
    }

    /** Replaces a buffer (in no batch's hands) by a larger one, pinned as the others are; frees the old one. */
    private MemorySegment grow(MemorySegment old, long bytes) {
        // allocated and registered under the lock that close() takes: a loader closed meanwhile frees it, once
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the loader is closed");
            }
            MemorySegment larger = allocate(bytes);
            buffers.set(buffers.indexOf(old), larger);
            PinnedMemory.Pin pin = pins.remove(old.address());
            if (pin != null) {
                pin.close();
            }
            if (pinned) {
                PinnedMemory.pin(larger).ifPresent(p -> pins.put(larger.address(), p));
            }
            arenas.remove(old.address()).close();
            reservations.remove(old.address()).close();
            return larger;
        }
    }

    @Override
    public long samples() {
        return source.size();
    }

    @Override
    public Shape sampleShape() {
        return source.sampleShape();
    }

    @Override
    public String describe() {
        // a conversion is said: the batches are not what the source holds
        return source.describe() + (outputType == source.dtype() ? "" : ", batches converted from "
                + source.dtype().name().toLowerCase(java.util.Locale.ROOT) + " to "
                + outputType.name().toLowerCase(java.util.Locale.ROOT));
    }

    @Override
    public int batchSize() {
        return batchSize;
    }

    @Override
    public long batchesPerEpoch() {
        long samples = sampler.epochLength();
        return dropLast ? samples / batchSize : (samples + batchSize - 1) / batchSize;
    }

    @Override
    public DType outputType() {
        return outputType;
    }

    @Override
    public synchronized long bufferMemory() {
        return buffers.stream().mapToLong(MemorySegment::byteSize).sum();
    }

    /**
     * One batch buffer: room for the samples as read and as handed out (after a type conversion). Sparse: the row
     * offsets, and values with their column indices for a quarter more than a batch's share of the source's stored
     * values (never more than dense); a batch with more replaces its buffer by one large enough.
     */
    static long bufferBytes(SampleSource source, int batchSize, DType outputType, boolean sparseBatches) {
        long outputBytes = (long) batchSize * source.sampleShape().size() * outputType.byteSize();
        if (sparseBatches) {
            SparseRows rows = sparseRowsOf(source);
            double perRow = rows.storedValues() / (double) Math.max(1, source.size());
            long expected = (long) Math.ceil(batchSize * perRow * 1.25) + 64;
            long capacity = Math.min(expected, (long) batchSize * source.sampleShape().size());
            return sparseBufferBytes(batchSize, capacity, source.dtype(), outputType);
        }
        return Math.max(outputBytes, (long) batchSize * source.sampleBytes());
    }

    /** A sparse buffer: row offsets (int64), then values (room for the wider of both types), then column indices. */
    private static long sparseBufferBytes(int batchSize, long capacity, DType from, DType to) {
        return valuesAt(batchSize) + capacity * (Math.max(from.byteSize(), to.byteSize()) + Integer.BYTES);
    }

    private static long valuesAt(int batchSize) {
        return (batchSize + 1L) * Long.BYTES;
    }

    /** The values a sparse buffer of this size holds. */
    private long capacity(MemorySegment buffer) {
        return (buffer.byteSize() - valuesAt(batchSize)) / (Math.max(source.dtype().byteSize(), outputType.byteSize()) + Integer.BYTES);
    }

    /**
     * Batch buffers: the one the caller holds and {@code max(1, prefetch)} read ahead; without reader threads nothing
     * is read ahead, so one buffer, reused while it is hot in the cache, is all the caller's reads need.
     */
    private int bufferCount() {
        return threads == 0 ? 1 : Math.max(1, prefetch) + 1;
    }

    @Override
    public String fingerprint() {
        return source.fingerprint();
    }

    @Override
    public String orderSettings() {
        return sampler.settings();
    }

    @Override
    public int rank() {
        return sampler.rank();
    }

    @Override
    public int worldSize() {
        return sampler.worldSize();
    }

    @Override
    public boolean dropLast() {
        return dropLast;
    }

    @Override
    public Loader.Epoch start(long epoch, long firstBatch) {
        return new EpochIterator(epoch, firstBatch);
    }

    @Override
    public synchronized long pinBuffers() {
        if (!pinned) {
            pinned = true;
            for (MemorySegment buffer : buffers) {
                PinnedMemory.pin(buffer).ifPresent(pin -> pins.put(buffer.address(), pin));
            }
        }
        return pins.values().stream().mapToLong(PinnedMemory.Pin::bytes).sum();
    }

    /** Stops the reader threads and frees the buffers (unpinned first); closes the source when the loader opened it. */
    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
        }
        synchronized (this) {
            closed = true;
            pins.values().forEach(PinnedMemory.Pin::close);
            pins.clear();
            arenas.values().forEach(Arena::close);
            arenas.clear();
            reservations.values().forEach(NativeMemory.Reservation::close);
            reservations.clear();
        }
        if (ownsSource) {
            source.close();
        }
    }

    @Override
    public String toString() {
        return source.describe() + ", batch " + batchSize + ", " + sampler + ", prefetch " + prefetch
                + ", threads " + threads;
    }

    private Batch fill(long epoch, long number, long[] indices, MemorySegment buffer) {
        if (sparse != null) {
            return fillSparse(epoch, number, indices, buffer);
        }
        Shape sample = source.sampleShape();
        long[] dims = new long[sample.dimension() + 1];
        dims[0] = indices.length;
        System.arraycopy(sample.getShape(), 0, dims, 1, sample.dimension());
        Shape shape = new Shape(dims);
        long outBytes = shape.size() * outputType.byteSize();
        try {
            if (outputType == source.dtype()) {
                source.readBatch(indices, buffer.asSlice(0, indices.length * source.sampleBytes()));
            } else {
                convertInPlace(indices, buffer);
            }
        } catch (RuntimeException e) {
            freeBuffers.addFirst(buffer);
            throw e;
        }
        return new Batch(epoch, number, indices, buffer, buffer.asSlice(0, outBytes), shape, outputType, freeBuffers::addFirst);
    }

    /**
     * A sparse batch: its rows in ascending sample order (runs of consecutive rows read at once; the order within a
     * batch does not matter to a gradient), each row's columns ascending and unique (duplicates summed, as scipy's
     * canonical form has them).
     */
    private Batch fillSparse(long epoch, long number, long[] indices, MemorySegment buffer) {
        MemorySegment into = buffer;
        try {
            long[] rows = indices.clone();
            Arrays.sort(rows);
            long nnz = sparse.storedValues(rows);
            if (nnz > capacity(into)) {
                into = grow(into, sparseBufferBytes(batchSize, nnz + nnz / 4, source.dtype(), outputType));
            }
            DType from = source.dtype();
            long capacity = capacity(into);
            long valuesAt = valuesAt(batchSize);
            long columnsAt = valuesAt + capacity * Math.max(from.byteSize(), outputType.byteSize());
            MemorySegment offsets = into.asSlice(0, (rows.length + 1L) * Long.BYTES);
            MemorySegment columns = into.asSlice(columnsAt, nnz * Integer.BYTES);
            long staging = DType.stagingOffset(nnz, from, outputType);
            long read = sparse.read(rows, into.asSlice(valuesAt + staging, nnz * from.byteSize()), columns, offsets);
            if (read != nnz) {
                throw new MemfitException(source.describe() + ": rows " + rows[0] + "... of batch " + number + " hold "
                        + read + " values, their row pointers say " + nnz + "; was the file changed while open?");
            }
            MemorySegment values = into.asSlice(valuesAt, nnz * outputType.byteSize());
            if (from != outputType) {
                DType.convertInPlace(into.asSlice(valuesAt), nnz, from, ByteOrder.nativeOrder(), outputType);
            }
            long kept = SparseCanonical.sumDuplicates(values, columns, offsets, rows.length, outputType);
            // the batch gives back the buffer it holds: the larger one, once grown
            return new Batch(epoch, number, rows, into, values.asSlice(0, kept * outputType.byteSize()),
                    columns.asSlice(0, kept * Integer.BYTES), offsets, new Shape(rows.length, source.sampleShape().get(0)),
                    outputType, freeBuffers::addFirst);
        } catch (RuntimeException | Error e) {
            // the buffer (the larger one, once grown) goes back, whatever failed: an allocation too
            freeBuffers.addFirst(into);
            throw e;
        }
    }

    /** Reads in the source's type where the conversion needs it, then converts in place to the output type. */
    private void convertInPlace(long[] indices, MemorySegment buffer) {
        DType from = source.dtype();
        long elements = indices.length * source.sampleShape().size();
        long start = DType.stagingOffset(elements, from, outputType);
        source.readBatch(indices, buffer.asSlice(start, elements * from.byteSize()));
        DType.convertInPlace(buffer, elements, from, ByteOrder.nativeOrder(), outputType);
    }

    private final class EpochIterator implements Loader.Epoch {
        private final long epoch;
        private final SampleOrder order;
        private final long batches;
        private final ArrayDeque<Read> pending = new ArrayDeque<>();
        private long submitted;
        private long returned;
        private Batch current;

        EpochIterator(long epoch, long firstBatch) {
            this.epoch = epoch;
            this.order = sampler.order(epoch);
            this.batches = batchesPerEpoch();
            // resuming skips to a batch: the order is a function of (sampler, epoch), so nothing before it is read
            this.submitted = firstBatch;
            this.returned = firstBatch;
            submitMore();
        }

        @Override
        public long position() {
            return returned;
        }

        @Override
        public void abandon() {
            for (Read read : pending) {
                if (read.claim()) {
                    // never started, and now never will: its buffer was never handed to a batch
                    read.cancel(false);
                    freeBuffers.addFirst(read.buffer);
                    continue;
                }
                try {
                    read.get().close();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                } catch (ExecutionException | RuntimeException ignored) {
                    // The failed read's buffer was never handed out; the error belongs to the abandoned epoch.
                }
            }
            pending.clear();
            if (current != null) {
                current.close();
                current = null;
            }
            submitted = batches;
        }

        private void submitMore() {
            // without readers the next batch is read when asked for, into the buffer the last one gave back
            int depth = pool == null ? 1 : Math.max(1, prefetch);
            while (submitted < batches && pending.size() < depth) {
                MemorySegment buffer = freeBuffers.pollFirst();
                if (buffer == null) {
                    return;
                }
                long number = submitted++;
                long from = number * batchSize;
                long[] indices = new long[(int) Math.min(batchSize, order.length() - from)];
                order.copy(from, indices, indices.length);
                Read read = new Read(buffer, () -> fill(epoch, number, indices, buffer));
                pending.add(read);
                if (pool != null) {
                    pool.execute(read);
                }
            }
        }

        @Override
        public boolean hasNext() {
            return returned < batches;
        }

        @Override
        public Batch next() {
            if (returned >= batches) {
                throw new NoSuchElementException("epoch " + epoch + " has " + batches + " batches");
            }
            if (current != null) {
                current.close();
            }
            submitMore();
            Read head = pending.poll();
            // Runs the read here when no reader has started it (a no-op when one has): no hand-off to wait for. While a
            // reader still has it, the caller reads the batches after it that nobody has started, instead of idling.
            head.run();
            for (Read later : pending) {
                if (head.isDone()) {
                    break;
                }
                later.run();
            }
            try {
                current = head.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new MemfitException("interrupted while waiting for batch " + returned + " of epoch " + epoch, e);
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw new MemfitException("reading batch " + returned + " of epoch " + epoch + " from " + source.describe()
                        + " failed: " + cause, cause);
            }
            returned++;
            submitMore();
            return current;
        }
    }

    /**
     * One batch read, which whichever thread claims it first runs: a reader, or the caller waiting for it. (A plain
     * {@code FutureTask} can be cancelled while it runs, which would free a buffer still being written.)
     */
    private static final class Read extends FutureTask<Batch> {
        private final MemorySegment buffer;
        private final AtomicBoolean claimed = new AtomicBoolean();

        Read(MemorySegment buffer, Callable<Batch> fill) {
            super(fill);
            this.buffer = buffer;
        }

        boolean claim() {
            return claimed.compareAndSet(false, true);
        }

        @Override
        public void run() {
            if (claim()) {
                super.run();
            }
        }
    }
}
