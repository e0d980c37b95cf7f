package dev.memfit.io.zarr;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.memfit.Fuzzing;
import dev.memfit.NativeMemory;
import dev.memfit.ProgressListener;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fuzzes the zarr reader on mutated bytes of small AnnData stores written by anndata and zarr-python as
 * {@code .zarr.zip} archives: the zip's central directory and local headers, the JSON of {@code .zgroup},
 * {@code .zarray}, {@code .zattrs} and {@code .zmetadata}, the chunks of every codec memfit decodes, and
 * {@link ZarrAnnData}'s open path (index, columns, a few rows, the sum). Every array of the store is also read
 * through {@link Zarr} directly (its first elements), so that damage anndata's layout would refuse early still
 * reaches the array reader. Seeds: {@code ZarrFuzzTestInputs/fuzzZarr}, written by {@code src/test/fuzz/make_zarr_seeds.py};
 * {@link ZarrChunkFuzzTest} fuzzes single chunks.
 */
class ZarrFuzzTest {

    private static final Path FOLDER = Fuzzing.tempFolder("memfit-fuzz-zarr");
    /** Dense bytes read at most from one array or one range of rows: a store legitimately expands (sparse X, fill values). */
    static final long MOST_READ_BYTES = 1L << 20;
    /**
     * Chunks one read touches at most: an array may legitimately have many tiny chunks, most of them missing (read as
     * the fill value), and each costs a lookup in the store, so the caller bounds them as it bounds bytes.
     */
    private static final long MOST_CHUNKS = 64;
    /** Strings read at most from one array. */
    private static final int MOST_STRINGS = 1 << 12;
    /** Groups nested deeper than this are not walked (a store lists each group's children once). */
    private static final int MOST_DEPTH = 8;

    @FuzzTest(maxDuration = "4m")
    void fuzzZarr(byte[] bytes) throws Exception {
        // a new name per input: the shared CSC transpose keys what it keeps by path
        Path file = Fuzzing.write(Files.createTempFile(FOLDER, "input", ".zarr.zip"), bytes);
        Path scratch = Files.createDirectories(FOLDER.resolve("scratch"));
        try {
            checkNativeMemory(() -> {
                Fuzzing.succeedsOrRefuses(bytes.length, () -> {
                    try (Zarr zarr = Zarr.open(file)) {
                        walk(zarr, "", 0);
                    }
                });
                Fuzzing.succeedsOrRefuses(bytes.length, () -> readAnnData(file, scratch));
            });
        } finally {
            Files.delete(file);
        }
    }

    /** What H5adFuzzTest does with an .h5ad, on a store. */
    private static void readAnnData(Path file, Path scratch) {
        try (ZarrAnnData data = ZarrAnnData.builder().setStore(file).optProgress(ProgressListener.silent())
                .optScratch(scratch).optTransposeBudget(1L << 16).open()) {
            data.index("obs");
            data.index("var");
            data.columns("obs");
            data.columns("var");
            int rows = (int) Math.min(data.observations(), 4);
            // a dense X's rows span its chunk columns, each a lookup (missing ones are fill values): bounded too
            ZarrArray dense = data.sparse() ? null : data.store().array(data.layer());
            if (rows > 0 && data.variables() <= MOST_READ_BYTES / Float.BYTES / rows
                    && (dense == null || chunks(dense, rows) <= MOST_CHUNKS)) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment into = arena.allocate(rows * data.variables() * Float.BYTES);
                    data.readRows(0, rows, into);
                }
            }
            // a pass over a sparse X costs its stored values; over a dense one, its shape, which compression and
            // missing chunks (fill values) legitimately make far larger than the store: bounded as rows are
            if (dense == null || data.observations() <= MOST_READ_BYTES / Double.BYTES / Math.max(1, data.variables())
                    && chunks(dense, data.observations()) <= MOST_CHUNKS) {
                data.sum();
            }
        }
    }

    private static void walk(Zarr zarr, String group, int depth) {
        zarr.attributes(group);
        if (!zarr.isGroup(group) || depth > MOST_DEPTH) {
            return;
        }
        for (String name : zarr.children(group)) {
            String path = group.isEmpty() ? name : group + "/" + name;
            if (zarr.isArray(path)) {
                read(zarr.array(path));
            } else {
                walk(zarr, path, depth + 1);
            }
        }
    }

    /**
     * Reads the first elements of an array as its type asks (at most {@link #MOST_READ_BYTES} of rows, or
     * {@link #MOST_STRINGS} strings, in at most {@link #MOST_CHUNKS} chunks), then a range starting inside it.
     *
     * @param array the array
     */
    static void read(ZarrArray array) {
        array.attributes().json();
        array.toString();
        if (array.length() == 0) {
            return;
        }
        // the chunks a row spans, and the rows of MOST_CHUNKS chunks
        long[] shape = array.shape();
        int[] chunks = array.chunks();
        long chunksPerRow = chunksPerRow(array);
        if (chunksPerRow > MOST_CHUNKS) {
            return;
        }
        long mostRows = shape.length == 0 || chunksPerRow == 0 ? array.length() : MOST_CHUNKS / chunksPerRow * chunks[0];
        if (array.dtype().kind() == ZarrDType.Kind.STRING) {
            if (array.shape().length <= 1) {
                int n = (int) Math.min(Math.min(array.length(), MOST_STRINGS), mostRows);
                array.readStrings(0, n);
                array.readStrings(n / 2, n - n / 2);
            }
            return;
        }
        long rowBytes = array.rowBytes();
        if (rowBytes <= 0 || rowBytes > MOST_READ_BYTES) {
            return;
        }
        long rows = Math.min(Math.min(array.length(), MOST_READ_BYTES / rowBytes), mostRows);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment into = arena.allocate(rows * rowBytes);
            // whole chunks (streamed through a per-thread buffer), then part of a chunk (decoded into the cache)
            array.readRows(0, rows, into);
            array.readRows(rows / 2, rows - rows / 2, into);
        }
        if (array.shape().length <= 1 && array.dtype().isNumeric()) {
            array.readDoubles(0, (int) Math.min(rows, MOST_STRINGS));
        }
    }

    /** The chunks the first rows of an array span (MOST_CHUNKS + 1 for more than MOST_CHUNKS). */
    private static long chunks(ZarrArray array, long rows) {
        int[] chunks = array.chunks();
        long bands = chunks.length == 0 ? 1 : rows / chunks[0] + (rows % chunks[0] == 0 ? 0 : 1);
        return bands > MOST_CHUNKS ? MOST_CHUNKS + 1 : Math.min(MOST_CHUNKS + 1, bands * chunksPerRow(array));
    }

    /** The chunks one row of an array spans (MOST_CHUNKS + 1 for more than MOST_CHUNKS). */
    private static long chunksPerRow(ZarrArray array) {
        long[] shape = array.shape();
        int[] chunks = array.chunks();
        long count = 1;
        for (int d = 1; d < shape.length && count <= MOST_CHUNKS; d++) {
            count *= Math.min(MOST_CHUNKS + 1, shape[d] / chunks[d] + (shape[d] % chunks[d] == 0 ? 0 : 1));
        }
        return Math.min(count, MOST_CHUNKS + 1);
    }

    /** Runs a check and asserts that it leaves no native memory reserved (mappings, allocations). */
    static void checkNativeMemory(Fuzzing.Call call) throws Exception {
        long allocatedBefore = NativeMemory.ALLOCATED.bytes();
        long mappedBefore = NativeMemory.MAPPED.bytes();
        call.run();
        if (NativeMemory.ALLOCATED.bytes() != allocatedBefore || NativeMemory.MAPPED.bytes() != mappedBefore) {
            throw new AssertionError("native memory left reserved after close: "
                    + (NativeMemory.ALLOCATED.bytes() - allocatedBefore) + " allocated, "
                    + (NativeMemory.MAPPED.bytes() - mappedBefore) + " mapped");
        }
    }
}
