package dev.memfit.prep;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * The fixed tree of {@link GeneSums}: block sums added one by one, or first per range of a power of two of blocks
 * (as Spark's tasks do) and then in range order, give the same bits; a plain left-to-right sum of the blocks does not.
 */
class GeneSumsTest {

    private static final int GENES = 7;
    private static final int BLOCKS = 23;

    @Test
    void alignedRangesGiveTheSameBitsAsOneByOne() {
        double[][][] blocks = blocks();
        GeneSums oneByOne = new GeneSums(GENES);
        for (double[][] block : blocks) {
            oneByOne.addBlock(10, block[0].clone(), block[1].clone());
        }
        Preprocess.GeneStatistics expected = oneByOne.statistics(names(), 3);
        for (int span : new int[]{1, 2, 4, 8, 16, 32}) {
            GeneSums combined = new GeneSums(GENES);
            for (int first = 0; first < BLOCKS; first += span) {
                GeneSums range = new GeneSums(GENES);
                for (int b = first; b < Math.min(BLOCKS, first + span); b++) {
                    range.addBlock(10, blocks[b][0].clone(), blocks[b][1].clone());
                }
                combined.add(range);
            }
            Preprocess.GeneStatistics got = combined.statistics(names(), 3);
            assertEquals(BLOCKS * 10L, combined.cells());
            assertArrayEquals(expected.means(), got.means(), "ranges of " + span);
            assertArrayEquals(expected.dispersions(), got.dispersions(), "ranges of " + span);
            assertArrayEquals(expected.selected(), got.selected(), "ranges of " + span);
        }
        // the order matters: a left-to-right sum of the same blocks differs in the last bits for some gene
        double[] leftToRight = new double[GENES];
        double[] tree = new double[GENES];
        for (int g = 0; g < GENES; g++) {
            for (double[][] block : blocks) {
                leftToRight[g] += block[0][g];
            }
            tree[g] = Math.expm1(expected.means()[g]) * BLOCKS * 10;
        }
        GeneSums leftSums = new GeneSums(GENES);
        leftSums.addBlock(BLOCKS * 10L, leftToRight, squares(blocks));
        assertNotEquals(java.util.Arrays.toString(expected.means()),
                java.util.Arrays.toString(leftSums.statistics(names(), 3).means()), "summation order shows in the bits");
        for (int g = 0; g < GENES; g++) {
            // and both are the sum, up to rounding
            assertEquals(leftToRight[g], tree[g], 1e-9 * Math.abs(leftToRight[g]));
        }
    }

    private static double[] squares(double[][][] blocks) {
        double[] squares = new double[GENES];
        for (int g = 0; g < GENES; g++) {
            for (double[][] block : blocks) {
                squares[g] += block[1][g];
            }
        }
        return squares;
    }

    /** Sums of values of very different magnitudes, so that the order of additions shows in the last bits. */
    private static double[][][] blocks() {
        SplittableRandom random = new SplittableRandom(3);
        double[][][] blocks = new double[BLOCKS][2][GENES];
        for (double[][] block : blocks) {
            for (int g = 0; g < GENES; g++) {
                double value = random.nextDouble() * Math.pow(10, random.nextInt(-3, 6));
                block[0][g] = value;
                block[1][g] = value * value;
            }
        }
        return blocks;
    }

    private static String[] names() {
        return java.util.stream.IntStream.range(0, GENES).mapToObj(g -> "g" + g).toArray(String[]::new);
    }
}
