package dev.memfit.source;

import ai.djl.ndarray.types.Shape;
import dev.memfit.MemfitException;
import dev.memfit.Threads;
import dev.memfit.DType;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.io.storage.Storage;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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
 * Opened with {@link Particles#builder()}{@code .setRecords(index).lazy()}.
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
     * Creates the source; {@link Particles#builder()} is the public way in.
     *
     * @param records where each sample's bytes are
     * @param storage where bytes come from
     * @param ownsStorage whether closing the source closes the storage
     * @param threads concurrent reads (1 reads on the caller's thread)
     */
    LazySource(RecordIndex records, Storage storage, boolean ownsStorage, int threads) {
        RecordIndex stack = records;
        if (threads < 1 || threads > 1024) {
            throw new MemfitException("lazy loading threads must be in [1, 1024], got " + threads);
        }
        this.stack = stack;
        this.storage = storage;
        this.ownsStorage = ownsStorage;
        this.threads = threads;
        this.pool = threads == 1 ? null
                : Executors.newFixedThreadPool(threads, Threads.daemon("memfit-lazy-" + POOL_ID.incrementAndGet()));
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
        List<Run> runs = plan(indices);
        // the whole batch is known now: a storage with slow requests (an object cache) can fetch it in parallel
        for (Run run : runs) {
            storage.willRead(stack.files().get(run.file()), run.offset(),
                    run.positions().length * shape.size() * stack.dtype(run.file()).byteSize());
        }
        // A confined segment can only be written by its owner thread: read on the caller's thread then.
        int groups = pool == null || !into.isAccessibleBy(ANY_OTHER_THREAD) ? 1 : Math.min(threads, runs.size());
        if (groups <= 1) {
            readRuns(runs, 0, 1, into);
            return;
        }
        // Thread g reads runs g, g + groups, g + 2 groups, ... of the sorted plan: the requests in flight at any
        // moment are neighbours on disk, so a disk serves them almost in one sweep (contiguous groups would send the
        // head back and forth between regions), and latency-bound storage overlaps them all the same. One task per
        // thread rather than one per run keeps small reads cheap; the caller takes group 0.
        List<Future<?>> futures = new ArrayList<>(groups - 1);
        for (int g = 1; g < groups; g++) {
            int first = g;
            futures.add(pool.submit(() -> readRuns(runs, first, groups, into)));
        }
        RuntimeException failure = null;
        try {
            readRuns(runs, 0, groups, into);
        } catch (RuntimeException e) {
            failure = e;
        }
        // every task is waited for, even after a failure: the batch buffer must not be reused while one still writes
        boolean interrupted = false;
        for (Future<?> future : futures) {
            try {
                future.get();
            } catch (InterruptedException e) {
                interrupted = true;
                future.cancel(true);
                if (failure == null) {
                    failure = new MemfitException("interrupted while reading from " + stack.source(), e);
                }
            } catch (ExecutionException e) {
                if (failure == null) {
                    failure = e.getCause() instanceof RuntimeException runtime ? runtime
                            : new MemfitException("reading from " + stack.source() + " failed: " + e.getCause(), e.getCause());
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Records that are neighbours in one file, read with one request, and where each goes in the batch. */
    private record Run(int file, long offset, int[] positions) {
    }

    /** Sorts the batch by (file, offset) and cuts it into runs of neighbouring records. */
    private List<Run> plan(long[] indices) {
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
        List<Run> runs = new ArrayList<>();
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
            runs.add(new Run(file, first, positions));
            start = end;
        }
        return runs;
    }

    /**
     * Reads every {@code step}-th run from {@code first}. Float32 records in native order whose batch positions follow each other are read straight into
     * the batch; others go through one staging buffer per call (conversion, scatter).
     */
    private void readRuns(List<Run> runs, int first, int step, MemorySegment into) {
        Arena arena = null;
        MemorySegment staging = null;
        try {
            for (int r = first; r < runs.size(); r += step) {
                Run run = runs.get(r);
                int[] positions = run.positions();
                DType stored = stack.dtype(run.file());
                Path file = stack.files().get(run.file());
                boolean nativeFloat = stored == DType.FLOAT32 && stack.byteOrder(run.file()).equals(ByteOrder.nativeOrder());
                if (nativeFloat && consecutive(positions)) {
                    storage.read(file, run.offset(), into.asSlice(positions[0] * imageBytes, positions.length * imageBytes));
                    continue;
                }
                if (staging == null) {
                    arena = Arena.ofConfined();
                    staging = arena.allocate(MAX_RUN * imageBytes, 64);
                }
                long elements = positions.length * shape.size();
                long at = DType.stagingOffset(elements, stored, DType.FLOAT32);
                storage.read(file, run.offset(), staging.asSlice(at, elements * stored.byteSize()));
                DType.convertInPlace(staging, elements, stored, stack.byteOrder(run.file()), DType.FLOAT32);
                for (int k = 0; k < positions.length; k++) {
                    MemorySegment.copy(staging, k * imageBytes, into, positions[k] * imageBytes, imageBytes);
                }
            }
        } finally {
            if (arena != null) {
                arena.close();
            }
        }
    }

    private static boolean consecutive(int[] positions) {
        for (int k = 1; k < positions.length; k++) {
            if (positions[k] != positions[0] + k) {
                return false;
            }
        }
        return true;
    }

    /** The listing's name, the record count, shape and type: the same on any storage, with any threads, or loaded. */
    @Override
    public String fingerprint() {
        return "records of " + stack.source().getFileName() + ": " + size() + " samples of " + sampleShape() + " " + dtype();
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
