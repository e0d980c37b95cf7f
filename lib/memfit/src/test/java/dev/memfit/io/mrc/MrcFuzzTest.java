package dev.memfit.io.mrc;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.memfit.Fuzzing;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Fuzzes the MRC reader: header decoding ({@link Mrc#readHeader}) and, when the header is accepted, reading every
 * image as float32 ({@link MrcReader#readImages}). Regression inputs: {@code MrcFuzzTestInputs/fuzzMrc} (files written
 * by mrcfile and the bad cases of issue 11, such as NX = NY = 2^30).
 */
class MrcFuzzTest {

    private static final Path FOLDER = Fuzzing.tempFolder("memfit-fuzz-mrc");

    @FuzzTest(maxDuration = "4m")
    void fuzzMrc(byte[] bytes) throws Exception {
        Path file = Fuzzing.write(FOLDER.resolve("input.mrcs"), bytes);
        Fuzzing.succeedsOrRefuses(bytes.length, () -> {
            MrcHeader header = Mrc.readHeader(file);
            // an accepted header promises exactly the file's bytes: what a caller sizes by it is bounded by the file
            if (header.fileBytes() != bytes.length) {
                throw new AssertionError(header + " accepted for a file of " + bytes.length + " bytes");
            }
            try (MrcReader reader = Mrc.open(file); Arena arena = Arena.ofConfined()) {
                // float32 output: at most 4 bytes per stored pixel byte, so at most 4x the file
                int count = Math.toIntExact(header.nz());
                MemorySegment images = arena.allocate(Math.max(1, count * header.imagePixels() * Float.BYTES));
                reader.readImages(0, count, images);
            }
        });
    }
}
