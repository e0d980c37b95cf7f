package dev.memfit.io.hdf5;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.memfit.Fuzzing;
import dev.memfit.NativeMemory;
import dev.memfit.ProgressListener;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fuzzes the {@code .h5ad} open path on mutated bytes of small files written by anndata: {@link H5ad#builder()} open,
 * the {@code obs}/{@code var} index and columns, a few rows and the sum. Regression inputs:
 * {@code H5adFuzzTestInputs/fuzzH5ad} (anndata's CSR, gzip CSR, dense and CSC layouts and an {@code obs} column
 * too short, and every finding so far, among them headers and heaps claiming sizes far past the file, which jhdf
 * now reads as slices of a mapping: see {@code Hdf5.open}).
 */
class H5adFuzzTest {

    private static final Path FOLDER = Fuzzing.tempFolder("memfit-fuzz-h5ad");
    /** Dense rows read at most: a sparse file legitimately expands, so the caller bounds what it asks for. */
    private static final long MOST_ROW_BYTES = 1L << 20;

    @FuzzTest(maxDuration = "4m")
    void fuzzH5ad(byte[] bytes) throws Exception {
        // a new name per input: jhdf and the shared CSC transpose key what they keep by path
        Path file = Fuzzing.write(Files.createTempFile(FOLDER, "input", ".h5ad"), bytes);
        Path scratch = Files.createDirectories(FOLDER.resolve("scratch"));
        try {
            check(file, scratch, bytes.length);
        } finally {
            Files.delete(file);
        }
    }

    private static void check(Path file, Path scratch, long length) throws Exception {
        long allocatedBefore = NativeMemory.ALLOCATED.bytes();
        long mappedBefore = NativeMemory.MAPPED.bytes();
        Fuzzing.succeedsOrRefuses(length, () -> {
            try (H5ad h5ad = H5ad.builder().setFile(file).optProgress(ProgressListener.silent()).optScratch(scratch)
                    .optTransposeBudget(1L << 16).open()) {
                long mapped = NativeMemory.MAPPED.bytes() - mappedBefore;
                if (mapped > length) {
                    throw new AssertionError("mapped " + mapped + " bytes of a " + length + "-byte file");
                }
                h5ad.index("obs");
                h5ad.index("var");
                h5ad.columns("obs");
                h5ad.columns("var");
                int rows = (int) Math.min(h5ad.observations(), 4);
                if (rows > 0 && h5ad.variables() <= MOST_ROW_BYTES / Float.BYTES / rows) {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment into = arena.allocate(rows * h5ad.variables() * Float.BYTES);
                        h5ad.readRows(0, rows, into);
                    }
                }
                h5ad.sum();
            }
        });
        if (NativeMemory.ALLOCATED.bytes() != allocatedBefore || NativeMemory.MAPPED.bytes() != mappedBefore) {
            throw new AssertionError("native memory left reserved after close: "
                    + (NativeMemory.ALLOCATED.bytes() - allocatedBefore) + " allocated, "
                    + (NativeMemory.MAPPED.bytes() - mappedBefore) + " mapped");
        }
    }
}
