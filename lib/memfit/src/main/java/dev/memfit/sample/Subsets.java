package dev.memfit.sample;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.io.npy.NpyHeader;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Random subsets of sample indices, as cryoDRGN's {@code select_random} makes them, and their {@code .npy} files.
 */
public final class Subsets {

    private Subsets() {
    }

    /** Above this many draws the hash set of Floyd's algorithm would pass 2^30 slots (8 GiB): one pass instead. */
    static final int MAX_HASHED = 1 << 29;

    /**
     * k distinct indices drawn uniformly from {@code [0, n)}, in increasing order, in O(k) memory and O(k log k) time
     * whatever n (choosing 5 of 10^13 samples takes microseconds): Floyd's algorithm ({@code k} draws into a hash set
     * of longs, then a sort), drawing the {@code n - k} indices left out instead when {@code k > n / 2}.
     *
     * <p>The same seed gives the same subset. The subsets differ from those of memfit versions before Floyd's
     * algorithm (which used Knuth's one-pass selection sampling, O(n) time): a seed chosen with an older version does
     * not give the same subset now. Only when both {@code k} and {@code n - k} pass 2^29 (a result of more than 4 GiB)
     * is the one-pass O(n) selection sampling still used, to keep the memory at the result's.
     *
     * @param n the population size
     * @param k the subset size, at most n
     * @param seed the seed
     * @return the indices, sorted
     */
    public static long[] random(long n, int k, long seed) {
        if (n < 0 || k < 0 || k > n) {
            throw new IllegalArgumentException("cannot choose " + k + " of " + n + " samples");
        }
        SplittableRandom random = new SplittableRandom(seed);
        if (k <= n - k) {
            return k <= MAX_HASHED ? floyd(n, k, random) : selection(n, k, random);
        }
        // more than half: the complement is smaller, and n < 2k fits the loop below
        long left = n - k;
        if (left > MAX_HASHED) {
            return selection(n, k, random);
        }
        long[] out = floyd(n, (int) left, random);
        long[] chosen = new long[k];
        int selected = 0;
        int skip = 0;
        for (long i = 0; i < n; i++) {
            if (skip < out.length && out[skip] == i) {
                skip++;
            } else {
                chosen[selected++] = i;
            }
        }
        return chosen;
    }

    /**
     * Floyd's algorithm: for j = n-k .. n-1, draw t uniformly in [0, j] and take t, or j when t is taken already;
     * every k-subset comes out with probability 1 / C(n, k).
     */
    private static long[] floyd(long n, int k, SplittableRandom random) {
        LongSet taken = new LongSet(k);
        for (long j = n - k; j < n; j++) {
            long t = random.nextLong(j + 1);
            if (!taken.add(t)) {
                taken.add(j);   // j was never drawable before this step: it is free
            }
        }
        long[] chosen = taken.toArray();
        Arrays.sort(chosen);
        return chosen;
    }

    /** Knuth's selection sampling (Algorithm S): one pass over [0, n), no memory beyond the result. */
    private static long[] selection(long n, int k, SplittableRandom random) {
        long[] chosen = new long[k];
        int selected = 0;
        for (long i = 0; i < n && selected < k; i++) {
            if (random.nextDouble() * (n - i) < k - selected) {
                chosen[selected++] = i;
            }
        }
        return chosen;
    }

    /**
     * A set of non-negative longs by open addressing with linear probing (no boxing: a {@code HashSet<Long>} costs
     * about 50 bytes per index, this 16 at most), sized for its capacity at a load of at most one half.
     */
    private static final class LongSet {
        private static final long EMPTY = -1;
        private final long[] slots;
        private final int mask;
        private int size;

        LongSet(int capacity) {
            int length = Integer.highestOneBit(Math.max(8, capacity) * 2 - 1) << 1;
            slots = new long[length];
            Arrays.fill(slots, EMPTY);
            mask = length - 1;
        }

        /** Adds a value; false when it was there already. */
        boolean add(long value) {
            int at = (int) mix(value) & mask;
            while (slots[at] != EMPTY) {
                if (slots[at] == value) {
                    return false;
                }
                at = (at + 1) & mask;
            }
            slots[at] = value;
            size++;
            return true;
        }

        long[] toArray() {
            long[] values = new long[size];
            int n = 0;
            for (long slot : slots) {
                if (slot != EMPTY) {
                    values[n++] = slot;
                }
            }
            return values;
        }

        /** Stafford's variant 13 of the MurmurHash3 finalizer: neighbouring indices land far apart. */
        private static long mix(long z) {
            z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
            z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
            return z ^ (z >>> 31);
        }
    }

    /**
     * Writes indices as an int64 {@code .npy} (loadable with {@code np.load}).
     *
     * @param file the output
     * @param indices the indices
     * @return the path written
     */
    public static Path write(Path file, long[] indices) {
        return Npy.write(file, NpyHeader.of(DType.INT64, indices.length), MemorySegment.ofArray(indices));
    }

    /**
     * Reads an index file written by {@link #write} or by numpy (any integer dtype, one dimension) and checks every
     * index against the population size.
     *
     * @param file the {@code .npy}
     * @param populationSize the number of samples the indices refer to
     * @return the indices
     */
    public static long[] read(Path file, long populationSize) {
        try (NpyArray array = Npy.load(file)) {
            NpyHeader header = array.header();
            DType dtype = header.dtype();
            if (header.shape().length != 1 || dtype == DType.FLOAT16 || dtype == DType.FLOAT32 || dtype == DType.FLOAT64
                    || dtype == DType.BOOL) {
                throw new InvalidFileException(file, -1, "a one-dimensional array of integer indices",
                        dtype.numpyCode() + " of shape " + java.util.Arrays.toString(header.shape()));
            }
            if (array.rows() > SampleOrder.MAX_ARRAY) {
                throw new InvalidFileException(file, -1, "at most " + SampleOrder.MAX_ARRAY + " indices (one long[])",
                        array.rows() + " indices");
            }
            long[] indices = new long[(int) array.rows()];
            for (int i = 0; i < indices.length; i++) {
                indices[i] = (long) dtype.getDouble(array.data(), (long) i * dtype.byteSize(), header.byteOrder());
                if (indices[i] < 0 || indices[i] >= populationSize) {
                    throw new InvalidFileException(file, header.dataOffset() + (long) i * dtype.byteSize(),
                            "indices in [0, " + populationSize + ")", "index " + indices[i] + " at position " + i);
                }
            }
            return indices;
        }
    }

}
