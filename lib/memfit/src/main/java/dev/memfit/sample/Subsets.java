package dev.memfit.sample;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.io.npy.NpyHeader;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * Random subsets of sample indices, as cryoDRGN's {@code select_random} makes them, and their {@code .npy} files.
 */
public final class Subsets {

    private Subsets() {
    }

    /**
     * k distinct indices drawn uniformly from {@code [0, n)}, in increasing order (Knuth's selection sampling: one
     * pass, no memory beyond the result).
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
