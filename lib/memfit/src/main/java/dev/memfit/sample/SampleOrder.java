package dev.memfit.sample;

import dev.memfit.MemfitException;

import java.util.Objects;

/**
 * The visiting order of one epoch, read position by position instead of held as one array: what
 * {@link Sampler#order(long)} returns, so that an epoch of more than 2^31 samples (or one whose {@code long[]} would
 * not fit in the heap) can still be walked batch by batch.
 *
 * <p>An order is immutable and safe to read from several threads at once.
 *
 * <pre>{@code
 * SampleOrder order = sampler.order(epoch);
 * long[] batch = new long[256];
 * for (long from = 0; from < order.length(); from += batch.length) {
 *     int count = (int) Math.min(batch.length, order.length() - from);
 *     order.copy(from, batch, count);   // the sample indices at positions [from, from + count)
 * }
 * }</pre>
 */
public interface SampleOrder {

    /** The largest array the JVM reliably allocates: longer epochs are only read through an order. */
    int MAX_ARRAY = Integer.MAX_VALUE - 8;

    /**
     * The number of positions in the epoch.
     *
     * @return the epoch length in samples
     */
    long length();

    /**
     * The sample visited at one position.
     *
     * @param position from 0 to {@code length() - 1}
     * @return the sample index
     * @throws IndexOutOfBoundsException when the position is outside the epoch
     */
    long index(long position);

    /**
     * Copies the samples of consecutive positions into an array, starting at its element 0.
     *
     * @param from the first position
     * @param into where the indices go; at least {@code count} long
     * @param count how many positions, with {@code from + count <= length()}
     * @throws IndexOutOfBoundsException when the range leaves the epoch or the array
     */
    default void copy(long from, long[] into, int count) {
        checkRange(this, from, into, count);
        for (int i = 0; i < count; i++) {
            into[i] = index(from + i);
        }
    }

    /**
     * An order that reads an array of indices (not copied: the array must not change afterwards).
     *
     * @param indices the sample index of each position
     * @return the order
     */
    static SampleOrder of(long[] indices) {
        Objects.requireNonNull(indices, "indices");
        return new SampleOrder() {
            @Override
            public long length() {
                return indices.length;
            }

            @Override
            public long index(long position) {
                return indices[(int) Objects.checkIndex(position, indices.length)];
            }

            @Override
            public void copy(long from, long[] into, int count) {
                checkRange(this, from, into, count);
                System.arraycopy(indices, (int) from, into, 0, count);
            }
        };
    }

    /**
     * The whole order as one array, for epochs that fit one.
     *
     * @param order the order
     * @return its indices
     * @throws MemfitException when the epoch has more positions than a Java array holds
     */
    static long[] toArray(SampleOrder order) {
        if (order.length() > MAX_ARRAY) {
            throw new MemfitException("an epoch of " + order.length() + " samples does not fit in one long[] (at most "
                    + MAX_ARRAY + "); read it in pieces with Sampler.order(epoch).copy(from, into, count)");
        }
        long[] indices = new long[(int) order.length()];
        order.copy(0, indices, indices.length);
        return indices;
    }

    private static void checkRange(SampleOrder order, long from, long[] into, int count) {
        Objects.checkFromIndexSize(0, count, into.length);
        Objects.checkFromIndexSize(from, count, order.length());
    }
}
