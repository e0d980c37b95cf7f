package dev.memfit.io.npy;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.memfit.Fuzzing;
import dev.memfit.NativeMemory;
import dev.memfit.ProgressListener;

import java.nio.file.Path;

/**
 * Fuzzes the {@code .npy} reader: header parsing ({@link Npy#readHeader}) and, when the header is accepted, loading
 * the data ({@link Npy#load}) and summing it. Run as a regression test on the committed inputs under
 * {@code NpyFuzzTestInputs/fuzzNpy} (valid files from numpy and the bad cases of issue 11), fuzzed with
 * {@code MEMFIT_FUZZ=1} (see README, Testing).
 */
class NpyFuzzTest {

    private static final Path FOLDER = Fuzzing.tempFolder("memfit-fuzz-npy");

    @FuzzTest(maxDuration = "4m")
    void fuzzNpy(byte[] bytes) throws Exception {
        Path file = Fuzzing.write(FOLDER.resolve("input.npy"), bytes);
        long allocatedBefore = NativeMemory.ALLOCATED.bytes();
        Fuzzing.succeedsOrRefuses(bytes.length, () -> {
            NpyHeader header = Npy.readHeader(file);
            // an accepted header promises exactly the file's bytes, so whatever a caller sizes by it fits in the file
            if (header.dataOffset() + header.dataBytes() != bytes.length) {
                throw new AssertionError(header + " accepted for a file of " + bytes.length + " bytes");
            }
            try (NpyArray array = Npy.load(file, ProgressListener.silent())) {
                long held = NativeMemory.ALLOCATED.bytes() - allocatedBefore;
                if (held > bytes.length) {
                    throw new AssertionError("loading a file of " + bytes.length + " bytes holds " + held + " native bytes");
                }
                array.sum();
            }
        });
        if (NativeMemory.ALLOCATED.bytes() != allocatedBefore) {
            throw new AssertionError("native memory left reserved: " + (NativeMemory.ALLOCATED.bytes() - allocatedBefore));
        }
    }
}
