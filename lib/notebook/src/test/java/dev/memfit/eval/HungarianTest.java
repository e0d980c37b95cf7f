package dev.memfit.eval;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Hungarian#maximize} against brute force over every permutation (7! = 5,040 at most). */
@Timeout(value = 120, unit = TimeUnit.SECONDS)   // a broken loop must fail the suite, not hang it
class HungarianTest {

    /** Continuous scores have a unique optimum almost surely, so the matching itself must be the brute-force one. */
    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7})
    void continuousScoresGiveTheUniqueOptimum(int n) {
        SplittableRandom random = new SplittableRandom(1_000 + n);
        for (int trial = 0; trial < 200; trial++) {
            double[][] score = new double[n][n];
            for (double[] row : score) {
                for (int j = 0; j < n; j++) {
                    row[j] = random.nextDouble(-10, 10);
                }
            }
            Optimum best = bruteForce(score);
            assertEquals(1, best.count, "test matrix should have a unique optimum");
            assertArrayEquals(best.match, checked(score), "trial " + trial + " of " + Arrays.deepToString(score));
        }
    }

    /** Small integer scores tie often (many optimal matchings), so only the total is determined. */
    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7})
    void tiedScoresGiveAnOptimalTotal(int n) {
        SplittableRandom random = new SplittableRandom(2_000 + n);
        int tiedTrials = 0;
        for (int trial = 0; trial < 200; trial++) {
            double[][] score = new double[n][n];
            for (double[] row : score) {
                for (int j = 0; j < n; j++) {
                    row[j] = random.nextInt(-2, 3);
                }
            }
            Optimum best = bruteForce(score);
            tiedTrials += best.count > 1 ? 1 : 0;
            assertEquals(best.total, total(score, checked(score)), 1e-9, Arrays.deepToString(score));
        }
        assertTrue(n == 1 || tiedTrials > 0, "no ties drawn");
    }

    /** Scores of mixed magnitude, all negative, so potentials must cross large gaps below zero. */
    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7})
    void negativeScoresOfMixedMagnitude(int n) {
        SplittableRandom random = new SplittableRandom(3_000 + n);
        for (int trial = 0; trial < 100; trial++) {
            double[][] score = new double[n][n];
            for (double[] row : score) {
                for (int j = 0; j < n; j++) {
                    row[j] = -Math.pow(10, random.nextDouble(-3, 6));
                }
            }
            Optimum best = bruteForce(score);
            assertEquals(best.total, total(score, checked(score)), 1e-9 * Math.abs(best.total));
        }
    }

    /** Taking the largest entry first (or each row's best in turn) forces a poor remainder; the optimum does not. */
    @Test
    void beatsGreedy() {
        // Greedy: 10, then 1 = 11; optimum 9 + 9 = 18.
        assertArrayEquals(new int[] {1, 0}, checked(new double[][] {{10, 9}, {9, 1}}));
        // Greedy: 7, then 5 and 0 = 12; optimum 6 + 6 + 4 = 16.
        assertArrayEquals(new int[] {1, 0, 2}, checked(new double[][] {{7, 6, 0}, {6, 0, 0}, {0, 5, 4}}));
    }

    @Test
    void constantMatrixGivesAPermutation() {
        double[][] score = new double[5][5];
        for (double[] row : score) {
            Arrays.fill(row, 3);
        }
        assertEquals(15, total(score, checked(score)));
    }

    @Test
    void emptyMatrixGivesAnEmptyMatching() {
        assertArrayEquals(new int[0], Hungarian.maximize(new double[0][0]));
    }

    /** Calls {@link Hungarian#maximize}, then asserts the input is unchanged and the result is a permutation. */
    private static int[] checked(double[][] score) {
        double[][] copy = Arrays.stream(score).map(double[]::clone).toArray(double[][]::new);
        int[] match = Hungarian.maximize(score);
        assertTrue(Arrays.deepEquals(copy, score), "input modified");
        assertEquals(score.length, match.length);
        boolean[] taken = new boolean[score.length];
        for (int column : match) {
            assertTrue(column >= 0 && column < score.length && !taken[column], "not a permutation: "
                    + Arrays.toString(match));
            taken[column] = true;
        }
        return match;
    }

    private static double total(double[][] score, int[] match) {
        double sum = 0;
        for (int i = 0; i < match.length; i++) {
            sum += score[i][match[i]];
        }
        return sum;
    }

    /** The best total over all permutations, one permutation reaching it, and how many reach it (within 1e-9). */
    private record Optimum(double total, int[] match, int count) {
    }

    private static Optimum bruteForce(double[][] score) {
        int n = score.length;
        int[] permutation = new int[n];
        for (int i = 0; i < n; i++) {
            permutation[i] = i;
        }
        double best = Double.NEGATIVE_INFINITY;
        int[] bestMatch = null;
        int count = 0;
        do {
            double t = total(score, permutation);
            double tolerance = 1e-9 * Math.max(1, Math.abs(t));
            if (t > best + tolerance) {
                best = t;
                bestMatch = permutation.clone();
                count = 1;
            } else if (t >= best - tolerance) {
                count++;
            }
        } while (nextPermutation(permutation));
        return new Optimum(best, bestMatch, count);
    }

    /** Advances to the next permutation in lexicographic order; false after the last. */
    private static boolean nextPermutation(int[] a) {
        int i = a.length - 2;
        while (i >= 0 && a[i] >= a[i + 1]) {
            i--;
        }
        if (i < 0) {
            return false;
        }
        int j = a.length - 1;
        while (a[j] <= a[i]) {
            j--;
        }
        swap(a, i, j);
        for (int l = i + 1, r = a.length - 1; l < r; l++, r--) {
            swap(a, l, r);
        }
        return true;
    }

    private static void swap(int[] a, int i, int j) {
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}
