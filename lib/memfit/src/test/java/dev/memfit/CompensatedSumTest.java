package dev.memfit;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CompensatedSumTest {

    private static double sum(double... values) {
        CompensatedSum sum = new CompensatedSum();
        for (double value : values) {
            sum.add(value);
        }
        return sum.value();
    }

    @Test
    void keepsTheRoundingErrorOfEachAddition() {
        // 1 + 1e-16 (ten times) + -1: a plain float64 sum loses every 1e-16 and gives 0
        double[] values = new double[12];
        values[0] = 1;
        java.util.Arrays.fill(values, 1, 11, 1e-16);
        values[11] = -1;
        assertEquals(1e-15, sum(values), 1e-30);
    }

    @Test
    void infinitiesGiveWhatNumpyGives() {
        // numpy: np.array([1, inf, 2]).sum() == inf; the compensation term alone would be inf - inf = NaN
        assertEquals(Double.POSITIVE_INFINITY, sum(1, Double.POSITIVE_INFINITY, 2));
        assertEquals(Double.NEGATIVE_INFINITY, sum(1, Double.NEGATIVE_INFINITY, 2));
        assertEquals(Double.POSITIVE_INFINITY, sum(Double.POSITIVE_INFINITY, Double.POSITIVE_INFINITY, -3));
        assertTrue(Double.isNaN(sum(Double.POSITIVE_INFINITY, 1, Double.NEGATIVE_INFINITY)));
        assertTrue(Double.isNaN(sum(1, Double.NaN, 2)));
    }

    @Test
    void aTotalBeyondFloat64sRangeIsInfinite() {
        assertEquals(Double.POSITIVE_INFINITY, sum(Double.MAX_VALUE, Double.MAX_VALUE));
    }
}
