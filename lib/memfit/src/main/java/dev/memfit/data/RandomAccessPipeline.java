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
    private final Arena arena = Arena.ofShared();
    private final ConcurrentLinkedDeque<MemorySegment> freeBuffers = new ConcurrentLinkedDeque<>();
    private final List<MemorySegment> buffers = new ArrayList<>();
    private final List<PinnedMemory.Pin> pins = new ArrayList<>();
    private boolean pinned;
    private final NativeMemory.Reservation reservation;
    private final long bufferBytes;

    RandomAccessPipeline(SampleSource source, boolean ownsSource, Sampler sampler, int batchSize, boolean dropLast, int prefetch,
           int threads, DType outputType) {
        this.source = source;
        this.ownsSource = ownsSource;
        this.sampler = sampler;
        this.batchSize = batchSize;
        this.dropLast = dropLast;
        this.prefetch = prefetch;
        this.threads = threads;
        this.outputType = outputType;
        this.pool = threads == 0 ? null
                : Executors.newFixedThreadPool(threads, Threads.daemon("memfit-loader-" + POOL_ID.incrementAndGet()));
        this.bufferBytes = bufferBytes(source, batchSize, outputType);
        int buffers = bufferCount();
        for (int i = 0; i < buffers; i++) {
            MemorySegment buffer = arena.allocate(Math.max(1, bufferBytes), 64);
            this.buffers.add(buffer);
            freeBuffers.add(buffer);
        }
        this.reservation = NativeMemory.ALLOCATED.reserve(buffers * bufferBytes);
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
    public long bufferMemory() {
        return bufferCount() * bufferBytes;
    }

    /** One batch buffer: room for the samples as read and as handed out (after a type conversion). */
    static long bufferBytes(SampleSource source, int batchSize, DType outputType) {
        long outputBytes = (long) batchSize * source.sampleShape().size() * outputType.byteSize();
        return Math.max(outputBytes, (long) batchSize * source.sampleBytes());
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
                PinnedMemory.pin(buffer).ifPresent(pins::add);
            }
        }
        return pins.stream().mapToLong(PinnedMemory.Pin::bytes).sum();
    }

    /** Stops the reader threads and frees the buffers (unpinned first); closes the source when the loader opened it. */
    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
        }
        synchronized (this) {
            pins.forEach(PinnedMemory.Pin::close);
            pins.clear();
        }
        arena.close();
        reservation.close();
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
