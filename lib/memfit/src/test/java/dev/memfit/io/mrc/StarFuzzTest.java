package dev.memfit.io.mrc;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.memfit.Fuzzing;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Fuzzes the RELION STAR reader ({@link Star#read}) and the particle stack opened from it ({@link ParticleStack#open}),
 * with the fixture stacks of {@link StackFixtures} beside the file. Regression inputs: {@code StarFuzzTestInputs/fuzzStar}
 * (RELION 3.0 and 3.1 layouts and the bad cases of issue 11: quoted fields with spaces, a short row).
 */
class StarFuzzTest {

    @FuzzTest(maxDuration = "4m")
    void fuzzStar(byte[] bytes) throws Exception {
        if (!Fuzzing.staysInside(new String(bytes, StandardCharsets.ISO_8859_1))) {
            return;   // could name a device or FIFO outside the fixture folder
        }
        Path file = Fuzzing.write(StackFixtures.FOLDER.resolve("input.star"), bytes);
        // each row may name a stack, whose header is read once per distinct file
        long reads = bytes.length + StackFixtures.STACK_BYTES;
        Fuzzing.succeedsOrRefuses(reads, () -> Star.read(file));
        Fuzzing.succeedsOrRefuses(reads, () -> {
            ParticleStack stack = ParticleStack.open(file);
            // every particle takes a row of the file: at least 2 bytes each ("x\n")
            if (stack.size() > bytes.length / 2) {
                throw new AssertionError(stack.size() + " particles from " + bytes.length + " bytes");
            }
            for (long i = 0; i < stack.size(); i++) {
                stack.offsetOf(i);
            }
        });
    }
}
