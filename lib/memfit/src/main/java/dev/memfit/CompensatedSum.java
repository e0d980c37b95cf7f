package dev.memfit;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * A float64 sum that keeps the rounding error of each addition (Neumaier's variant of Kahan summation), so that the
 * total is the exact sum of the values rounded once, whatever their count and magnitudes. Every place memfit sums a
 * data set (inspect, describe, validation) adds its values with this, in the order the values are stored: the same
 * data gives the same bits from a local file, a mapping, a bucket or shards, and agrees with numpy's pairwise
 * {@code sum(dtype=np.float64)} to within numpy's own rounding error.
 *
 * <pre>{@code
 * CompensatedSum sum = new CompensatedSum();
 * for (double v : values) sum.add(v);
 * double total = sum.value();
 * }</pre>
 */
public final class CompensatedSum {

    private double sum;
    private double compensation;

    /**
     * Adds one value.
     *
     * @param value the value
     */
    public void add(double value) {
        double t = sum + value;
        compensation += Math.abs(sum) >= Math.abs(value) ? (sum - t) + value : (value - t) + sum;
        sum = t;
    }

    /**
     * Adds {@code count} consecutive elements of a type, as stored (converted to float64 exactly).
     *
     * @param bytes where they are
     * @param offset the byte offset of the first
     * @param count how many
     * @param dtype their type
     * @param order their byte order
     */
    public void add(MemorySegment bytes, long offset, long count, DType dtype, ByteOrder order) {
        int size = dtype.byteSize();
        for (long i = 0; i < count; i++) {
            add(dtype.getDouble(bytes, offset + i * size, order));
        }
    }

    /**
     * The sum so far: an infinity or NaN among the values (or a total beyond float64's range) gives what a plain
     * float64 sum gives, as numpy does: {@code +inf} or {@code -inf} when the infinities share a sign, NaN otherwise.
     *
     * @return the compensated total
     */
    public double value() {
        // once the running sum is not finite, the compensation holds inf - inf = NaN, which is no rounding error
        return Double.isFinite(sum) ? sum + compensation : sum;
    }
}
