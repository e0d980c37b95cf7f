package dev.memfit.io.mrc;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.memfit.Fuzzing;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Fuzzes {@code .txt} listings of stacks ({@link ParticleStack#open} on one path per line), with the fixture stacks of
 * {@link StackFixtures} beside the listing. Regression inputs: {@code ListingFuzzTestInputs/fuzzListing} (the bad
 * cases of issue 11, among them an empty listing).
 */
class ListingFuzzTest {

    /** The most images a fixture stack holds: a listing names stacks, each line adds at most this many particles. */
    private static final int MOST_IMAGES = 3;

    @FuzzTest(maxDuration = "4m")
    void fuzzListing(byte[] bytes) throws Exception {
        if (!Fuzzing.staysInside(new String(bytes, StandardCharsets.ISO_8859_1))) {
            return;   // could name a device or FIFO outside the fixture folder
        }
        Path file = Fuzzing.write(StackFixtures.FOLDER.resolve("input.txt"), bytes);
        long lines = 1 + new String(bytes, StandardCharsets.ISO_8859_1).chars().filter(c -> c == '\n' || c == '\r').count();
        // every line may name a stack and is read (its header) again
        Fuzzing.succeedsOrRefuses(bytes.length + lines * StackFixtures.STACK_BYTES, () -> {
            ParticleStack stack = ParticleStack.open(file);
            if (stack.size() > lines * MOST_IMAGES) {
                throw new AssertionError(stack.size() + " particles from " + lines + " lines");
            }
            for (long i = 0; i < stack.size(); i++) {
                stack.offsetOf(i);
            }
        });
    }
}
