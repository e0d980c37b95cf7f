package dev.memfit.data;

import ai.djl.ndarray.types.Shape;
import dev.memfit.MemfitException;
import dev.memfit.io.DType;
import dev.memfit.io.RecordIndex;
import dev.memfit.io.Storage;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Samples read on demand from records in files (particle stacks, a packed HDF5 file, a folder of small files):
 * nothing is loaded up front, and a batch costs only its own records.
 *
 * <p>For each batch the requested records are grouped by file and sorted, neighbouring records are coalesced into
 * one read (up to {@value #MAX_RUN} records), and the reads run on a pool of {@code threads} threads, which is what
 * hides the latency of slow storage (cryoDRGN's {@code --lazy --max-threads}). Samples are delivered as float32.
 */
public final class LazySource implements SampleSource {

    /** The longest run of consecutive images read in one request. */
    public static final int MAX_RUN = 64;
    private static final AtomicInteger POOL_ID = new AtomicInteger();
    /** Never started: asks whether a segment may be written by threads other than its owner. */
    private static final Thread ANY_OTHER_THREAD = new Thread(() -> { });

    private final RecordIndex stack;
    private final Storage storage;
    private final boolean ownsStorage;
    private final int threads;
    private final ExecutorService pool;
    private final Shape shape;
    private final long imageBytes;

    /**
     * Creates the source.
     *
     * @param records where each sample's bytes are
     * @param storage where bytes come from
     * @param ownsStorage whether closing the source closes the storage
     * @param threads concurrent reads (1 reads on the caller's thread)
     */
    public LazySource(RecordIndex records, Storage storage, boolean ownsStorage, int threads) {
        RecordIndex stack = records;
        if (threads < 1 || threads > 1024) {
            throw new MemfitException("lazy loading threads must be in [1, 1024], got " + threads);
        }
        this.stack = stack;
        this.storage = storage;
        this.ownsStorage = ownsStorage;
        this.threads = threads;
        int id = POOL_ID.incrementAndGet();
        AtomicInteger count = new AtomicInteger();
        this.pool = threads == 1 ? null : Executors.newFixedThreadPool(threads, runnable -> {
            Thread thread = new Thread(runnable, "memfit-lazy-" + id + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        this.shape = new Shape(stack.sampleShape());
        this.imageBytes = shape.size() * Float.BYTES;
    }

    /**
     * Where the records are.
     *
     * @return the index
     */
    public RecordIndex records() {
        return stack;
    }

    @Override
    public long size() {
        return stack.size();
    }

    @Override
    public Shape sampleShape() {
        return shape;
    }

    @Override
    public DType dtype() {
        return DType.FLOAT32;
    }

    @Override
    public void read(long index, MemorySegment into) {
        readBatch(new long[]{index}, into);
    }

    @Override
    public void readBatch(long[] indices, MemorySegment into) {
        List<Callable<Void>> runs = plan(indices, into);
        // A confined segment can only be written by its owner thread: read on the caller's thread then.
        if (pool == null || runs.size() == 1 || !into.isAccessibleBy(ANY_OTHER_THREAD)) {
            for (Callable<Void> run : runs) {
                call(run);
            }
            return;
        }
        List<Future<Void>> futures = new ArrayList<>(runs.size());
        for (Callable<Void> run : runs) {
            futures.add(pool.submit(run));
        }
        for (Future<Void> future : futures) {
            try {
                future.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new MemfitException("interrupted while reading from " + stack.source(), e);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw new MemfitException("reading from " + stack.source() + " failed: " + e.getCause(), e.getCause());
            }
        }
    }

    private static void call(Callable<Void> run) {
        try {
            run.call();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new MemfitException(e.getMessage(), e);
        }
    }

    /** Sorts the batch by (file, image) and cuts it into runs of consecutive images, one read each. */
    private List<Callable<Void>> plan(long[] indices, MemorySegment into) {
        Integer[] order = new Integer[indices.length];
        for (int i = 0; i < order.length; i++) {
            if (indices[i] < 0 || indices[i] >= stack.size()) {
                throw new IndexOutOfBoundsException("sample " + indices[i] + " outside [0, " + stack.size() + ") of " + stack.source());
            }
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> {
            int byFile = Integer.compare(stack.fileOf(indices[a]), stack.fileOf(indices[b]));
            return byFile != 0 ? byFile : Long.compare(stack.offsetOf(indices[a]), stack.offsetOf(indices[b]));
        });
        List<Callable<Void>> runs = new ArrayList<>();
        int start = 0;
        while (start < order.length) {
            int end = start + 1;
            int file = stack.fileOf(indices[order[start]]);
            long first = stack.offsetOf(indices[order[start]]);
            long recordBytes = shape.size() * stack.dtype(file).byteSize();
            while (end < order.length && end - start < MAX_RUN && stack.fileOf(indices[order[end]]) == file
                    && stack.offsetOf(indices[order[end]]) == first + (end - start) * recordBytes) {
                end++;
            }
            int[] positions = new int[end - start];
            for (int k = 0; k < positions.length; k++) {
                positions[k] = order[start + k];
            }
            runs.add(() -> {
                readRun(file, first, positions, into);
                return null;
            });
            start = end;
        }
        return runs;
    }

    /** One read of neighbouring records, converted to float32, then scattered to their places in the batch. */
    private void readRun(int file, long offset, int[] positions, MemorySegment into) {
        DType stored = stack.dtype(file);
        long elements = positions.length * shape.size();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment staging = arena.allocate(positions.length * imageBytes, 64);
            long at = DType.stagingOffset(elements, stored, DType.FLOAT32);
            storage.read(stack.files().get(file), offset, staging.asSlice(at, elements * stored.byteSize()));
            DType.convertInPlace(staging, elements, stored, stack.byteOrder(file), DType.FLOAT32);
            for (int k = 0; k < positions.length; k++) {
                MemorySegment.copy(staging, k * imageBytes, into, positions[k] * imageBytes, imageBytes);
            }
        }
    }

    @Override
    public String describe() {
        return "lazy " + stack.source().getFileName() + " (" + threads + " threads, " + storage.describe() + ")";
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
        }
        if (ownsStorage) {
            storage.close();
        }
    }
}
