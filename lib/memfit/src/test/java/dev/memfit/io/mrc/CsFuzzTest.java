package dev.memfit.io.mrc;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.memfit.Fuzzing;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Fuzzes cryoSPARC {@code .cs} particle files ({@link ParticleStack#open} on numpy records naming stacks in
 * {@code blob/path} and images in {@code blob/idx}), with the fixture stacks of {@link StackFixtures} beside the file.
 * Regression inputs: {@code CsFuzzTestInputs/fuzzCs}, written by {@code src/test/fuzz/make_seeds.py} in cryoSPARC's
 * field layout (valid files, an exported one with {@code >} paths, unicode paths, and bad cases: an index past the
 * end, a missing or truncated stack, a truncated file, no blob fields, pickled objects, an unknown type, a row count
 * beyond the file, the compressed CSDAT format).
 */
class CsFuzzTest {

    @FuzzTest(maxDuration = "4m")
    void fuzzCs(byte[] bytes) throws Exception {
        if (!Fuzzing.staysInside(new String(bytes, StandardCharsets.ISO_8859_1))) {
            return;   // could name a device or FIFO outside the fixture folder
        }
        Path file = Fuzzing.write(StackFixtures.FOLDER.resolve("input.cs"), bytes);
        // each fixture stack's header is read at most once, however many rows name it
        Fuzzing.succeedsOrRefuses(bytes.length + StackFixtures.STACK_BYTES, () -> {
            ParticleStack stack = ParticleStack.open(file);
            // a row takes at least 2 bytes (a 1-byte path, a 1-byte index): a particle count beyond that is invented
            if (stack.size() > bytes.length / 2) {
                throw new AssertionError(stack.size() + " particles from " + bytes.length + " bytes");
            }
            for (long i = 0; i < stack.size(); i++) {
                stack.offsetOf(i);
            }
        });
    }
}
