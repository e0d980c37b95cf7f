package dev.memfit.sample;

import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SubsetsTest {

    @Test
    void fiveOfTenTrillionAreDistinctSortedAndInRange(@TempDir Path dir) {
        long n = 10_000_000_000_000L;
        long[] chosen = Subsets.random(n, 5, 42);
        assertEquals(5, chosen.length);
        for (int i = 0; i < chosen.length; i++) {
            assertTrue(chosen[i] >= 0 && chosen[i] < n, Arrays.toString(chosen));
            assertTrue(i == 0 || chosen[i] > chosen[i - 1], "sorted and distinct: " + Arrays.toString(chosen));
        }
        // spread over the range, not bunched at its start as a one-pass sampler stopped early would be
        assertTrue(chosen[4] > n / 100, Arrays.toString(chosen));
        assertArrayEquals(chosen, Subsets.random(n, 5, 42), "the same seed gives the same subset");
        assertNotEquals(Arrays.toString(chosen), Arrays.toString(Subsets.random(n, 5, 43)));
        // what numpy reads back: int64, the same values
        Path file = Subsets.write(dir.resolve("ind.npy"), chosen);
        assertEquals("int64 " + Arrays.toString(chosen).replace(",", ""), PythonPeer.run("""
                import sys, numpy as np
                a = np.load(sys.argv[1])
                print(a.dtype, '[' + ' '.join(str(int(v)) for v in a) + ']')
                """, file));
    }

    @Test
    void everySubsetIsEquallyLikely() {
        // two of five (Floyd's draws) and four of six (the complement's): chi-square over seeds 0..N-1
        assertUniform(5, 2, 20_000);
        assertUniform(6, 4, 30_000);
        assertUniform(7, 1, 14_000);
    }

    /** Pearson's chi-square over all C(n, k) subsets, below the 0.1% critical value of its degrees of freedom. */
    private static void assertUniform(long n, int k, int seeds) {
        Map<String, Integer> counts = new HashMap<>();
        for (int seed = 0; seed < seeds; seed++) {
            long[] chosen = Subsets.random(n, k, seed);
            assertEquals(k, LongStream.of(chosen).distinct().count());
            counts.merge(Arrays.toString(chosen), 1, Integer::sum);
        }
        int subsets = (int) binomial(n, k);
        assertEquals(subsets, counts.size(), "every subset occurs: " + counts.keySet());
        double expected = (double) seeds / subsets;
        double chiSquare = counts.values().stream().mapToDouble(c -> (c - expected) * (c - expected) / expected).sum();
        // 0.1% critical values of chi-square for 9, 14 and 6 degrees of freedom
        double critical = switch (subsets - 1) {
            case 9 -> 27.877;
            case 14 -> 36.123;
            case 6 -> 22.458;
            default -> throw new IllegalArgumentException("no critical value for " + (subsets - 1) + " degrees of freedom");
        };
        assertTrue(chiSquare < critical, n + " choose " + k + ": chi-square " + chiSquare + " >= " + critical + " " + counts);
    }

    private static long binomial(long n, int k) {
        long result = 1;
        for (int i = 1; i <= k; i++) {
            result = result * (n - k + i) / i;
        }
        return result;
    }

    @Test
    void allOrNoneOrMostOfThem() {
        assertArrayEquals(LongStream.range(0, 1000).toArray(), Subsets.random(1000, 1000, 7));
        assertArrayEquals(new long[0], Subsets.random(1000, 0, 7));
        assertArrayEquals(new long[0], Subsets.random(0, 0, 7));
        long[] most = Subsets.random(1000, 999, 7);
        assertEquals(999, LongStream.of(most).distinct().count());
        assertTrue(LongStream.range(1, most.length).allMatch(i -> most[(int) i] > most[(int) i - 1]));
        assertTrue(most[0] >= 0 && most[998] < 1000);
        long[] half = Subsets.random(1_000_000, 500_000, 1);
        assertEquals(500_000, LongStream.of(half).distinct().count());
        assertTrue(LongStream.range(1, half.length).allMatch(i -> half[(int) i] > half[(int) i - 1]));
        assertThrows(IllegalArgumentException.class, () -> Subsets.random(4, 5, 0));
        assertThrows(IllegalArgumentException.class, () -> Subsets.random(4, -1, 0));
    }
}
