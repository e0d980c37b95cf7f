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
 *
 * <p>Batches in parts: when the source reads from memory ({@link SampleSource#readsFromMemory}) and the batch needs no
 * conversion, a batch is cut into runs of rows that the readers and the caller claim one at a time, all working on the
 * oldest batch first. Handing whole batches to threads made the consumer wait for the one batch a slower thread still
 * held while the others filled buffers ahead; in parts, the batch asked for gets every thread.
 */
final class RandomAccessPipeline implements Loader.Pipeline {

    private static final AtomicInteger POOL_ID = new AtomicInteger();
    private static final long MIN_PART_BYTES = 64 << 10;

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
    /** Rows per part of a batch that several threads read together; {@code batchSize} when batches are not split. */
    private final int partRows;

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
        this.partRows = partRows(source, batchSize, threads, sparseBatches || outputType != source.dtype());
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

    /**
     * Rows per part: two parts per copying thread (the readers and the caller), so that a thread finishing early
     * takes another, but never under 64 KiB a part (below that the claims would cost more than the copies).
     * Whole batches when there is no reader to share them with, when the source decodes or gathers I/O a batch at
     * a time, or when the batch is sparse or converted (both are written as a whole).
     */
    static int partRows(SampleSource source, int batchSize, int threads, boolean wholeBatches) {
        if (threads == 0 || wholeBatches || !source.readsFromMemory()) {
            return batchSize;
        }
        long minimum = (MIN_PART_BYTES + source.sampleBytes() - 1) / Math.max(1, source.sampleBytes());
        long share = (batchSize + 2L * (threads + 1) - 1) / (2L * (threads + 1));
        return (int) Math.min(batchSize, Math.max(minimum, share));
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

    /** Buffers in no batch's and no read's hands (all of them between epochs). */
    int freeBufferCount() {
        return freeBuffers.size();
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
            // a reader copying into a buffer holds its arena, and freeing it under the copy fails: the readers end
            // their batch or part first (interrupted; a copy from memory takes milliseconds), for a minute at most
            boolean interrupted = false;
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(1);
            while (!pool.isTerminated() && System.nanoTime() < deadline) {
                try {
                    pool.awaitTermination(Math.max(1, deadline - System.nanoTime()), java.util.concurrent.TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
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
        try {
            if (outputType == source.dtype()) {
                source.readBatch(indices, buffer.asSlice(0, indices.length * source.sampleBytes()));
            } else {
                convertInPlace(indices, buffer);
            }
        } catch (RuntimeException | Error e) {
            freeBuffers.addFirst(buffer);
            throw e;
        }
        return denseBatch(epoch, number, indices, buffer);
    }

    /** One part of a dense batch read without conversion: rows {@code [from, to)} of the batch, in place. */
    private void fillPart(long[] indices, int from, int to, MemorySegment buffer) {
        long rowBytes = source.sampleBytes();
        long[] part = from == 0 && to == indices.length ? indices : Arrays.copyOfRange(indices, from, to);
        source.readBatch(part, buffer.asSlice(from * rowBytes, (to - from) * rowBytes));
    }

    /** The batch handed out for a filled dense buffer. */
    private Batch denseBatch(long epoch, long number, long[] indices, MemorySegment buffer) {
        Shape sample = source.sampleShape();
        long[] dims = new long[sample.dimension() + 1];
        dims[0] = indices.length;
        System.arraycopy(sample.getShape(), 0, dims, 1, sample.dimension());
        Shape shape = new Shape(dims);
        long outBytes = shape.size() * outputType.byteSize();
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
            boolean interrupted = false;
            for (Read read : pending) {
                if (read.cancelUnstarted()) {
                    // never started, and now never will: its buffer was never handed to a batch
                    freeBuffers.addFirst(read.buffer);
                    continue;
                }
                // started: its parts nobody has claimed are dropped, and the buffer comes back once the claimed ones
                // are done. Waited for even when interrupted: the buffers are freed after this, never under a reader
                read.cancelRest();
                while (true) {
                    try {
                        read.result.get().close();
                        break;
                    } catch (InterruptedException e) {
                        interrupted = true;
                    } catch (ExecutionException | RuntimeException ignored) {
                        // The failed or dropped read gave its buffer back; the error belongs to the abandoned epoch.
                        break;
                    }
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
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
                Read read = new Read(epoch, number, indices, buffer);
                pending.add(read);
                if (pool != null) {
                    // one task per reader that can share it: each claims parts until none is left
                    for (int t = 0; t < Math.min(threads, read.parts); t++) {
                        pool.execute(read::help);
                    }
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
                current = null;
            }
            submitMore();
            // stays pending until it is handed out or has failed: interrupted meanwhile, abandon() gets its buffer back
            Read head = pending.peek();
            // Reads the parts of the batch that no reader has started (all of it when none has): no hand-off to wait
            // for. While readers still have parts of it, the caller reads the next batches' unclaimed parts, one part
            // at a time, instead of idling.
            head.help();
            helping:
            for (Read later : pending) {
                while (later != head && !head.result.isDone()) {
                    if (!later.helpOne()) {
                        continue helping;
                    }
                }
                if (head.result.isDone()) {
                    break;
                }
            }
            try {
                current = head.result.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new MemfitException("interrupted while waiting for batch " + returned + " of epoch " + epoch, e);
            } catch (ExecutionException e) {
                // the failed batch is consumed: the epoch goes on with the next one if the caller asks for it
                pending.poll();
                returned++;
                Throwable cause = e.getCause();
                if (cause instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw new MemfitException("reading batch " + (returned - 1) + " of epoch " + epoch + " from "
                        + source.describe() + " failed: " + cause, cause);
            }
            pending.poll();
            returned++;
            submitMore();
            return current;
        }
    }

    /**
     * One batch read, in {@code parts} runs of rows that whichever threads come first claim (one part: the whole batch,
     * read by {@link #fill}). The thread that finishes the last part completes the batch. A part, once claimed, is
     * always finished, so a buffer is never freed while a thread still writes into it.
     */
    private final class Read {
        private final long epoch;
        private final long number;
        private final long[] indices;
        private final MemorySegment buffer;
        private final int parts;
        private final AtomicInteger claimed = new AtomicInteger();
        private final AtomicInteger finished = new AtomicInteger();
        /** Set by {@link #cancelRest}: the parts still running end the read without a batch. */
        private volatile boolean cancelled;
        private final java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
        private final java.util.concurrent.CompletableFuture<Batch> result = new java.util.concurrent.CompletableFuture<>();

        Read(long epoch, long number, long[] indices, MemorySegment buffer) {
            this.epoch = epoch;
            this.number = number;
            this.indices = indices;
            this.buffer = buffer;
            this.parts = partRows >= indices.length ? 1 : (indices.length + partRows - 1) / partRows;
        }

        /** Claims every part when none has been: true when the read never started (its buffer is free again). */
        boolean cancelUnstarted() {
            return claimed.compareAndSet(0, parts);
        }

        /**
         * For a read already started: claims the parts nobody has, without reading them, so that the read ends once
         * the claimed parts are done, giving its buffer back instead of a batch (a read of one part is left to end).
         */
        void cancelRest() {
            if (parts == 1) {
                return;
            }
            cancelled = true;
            int taken = Math.min(parts, claimed.getAndSet(parts));
            if (taken < parts) {
                partsDone(parts - taken);
            }
        }

        /** Reads parts nobody has claimed until none is left. */
        void help() {
            while (helpOne()) {
                // the next part
            }
        }

        /** Reads one part nobody has claimed: false when none is left. */
        boolean helpOne() {
            int part = claimed.getAndIncrement();
            if (part >= parts) {
                return false;
            }
            if (parts == 1) {
                // fill hands its buffer back itself when it fails
                try {
                    result.complete(fill(epoch, number, indices, buffer));
                } catch (Throwable e) {
                    result.completeExceptionally(e);
                }
                return true;
            }
            try {
                if (failure.get() == null && !cancelled) {
                    fillPart(indices, part * partRows, Math.min(indices.length, (part + 1) * partRows), buffer);
                }
            } catch (Throwable e) {
                if (!failure.compareAndSet(null, e)) {
                    failure.get().addSuppressed(e);
                }
            }
            partsDone(1);
            return true;
        }

        /** Counts finished (or dropped) parts; the last one completes the read. */
        private void partsDone(int count) {
            if (finished.addAndGet(count) != parts) {
                return;
            }
            Throwable failed = failure.get();
            if (failed == null && !cancelled) {
                try {
                    result.complete(denseBatch(epoch, number, indices, buffer));
                    return;
                } catch (Throwable e) {
                    failed = e;
                }
            }
            freeBuffers.addFirst(buffer);
            if (failed != null) {
                result.completeExceptionally(failed);
            } else {
                result.cancel(false);
            }
        }
    }
}
