package dev.memfit.synthetic;

import dev.memfit.source.SampleSource;
import dev.memfit.Progress;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.npy.NpyWriter;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * Builds large data sets from small ones by sampling rows with replacement, writing in chunks so that memory stays
 * at one chunk whatever the output size (how notebook 03 makes a file many times the heap).
 */
public final class Resampling {

    private Resampling() {
    }

    /**
     * Writes {@code rows} rows drawn uniformly with replacement from a source into a new {@code .npy}.
     *
     * @param source the rows to draw from
     * @param rows the number of rows to write
     * @param output the {@code .npy} to create (written under a temporary name, renamed when complete)
     * @param seed the seed of the draws
     * @param chunkBytes the size of the staging buffer in native memory (e.g. 64 MB)
     * @return the path written
     */
    public static Path rowsWithReplacement(SampleSource source, long rows, Path output, long seed, long chunkBytes) {
        long rowBytes = source.sampleBytes();
        int chunkRows = (int) Math.max(1, Math.min(Integer.MAX_VALUE, chunkBytes / rowBytes));
        long[] dims = new long[source.sampleShape().dimension() + 1];
        dims[0] = rows;
        System.arraycopy(source.sampleShape().getShape(), 0, dims, 1, dims.length - 1);
        SplittableRandom random = new SplittableRandom(seed);
        try (Arena arena = Arena.ofConfined();
             NpyWriter writer = Npy.create(output, NpyHeader.of(source.dtype(), dims));
             Progress progress = Progress.bar("Writing " + output.getFileName(), rows * rowBytes >> 20, "MB")) {
            MemorySegment chunk = arena.allocate((long) chunkRows * rowBytes, 64);
            long[] indices = new long[chunkRows];
            for (long first = 0; first < rows; first += chunkRows) {
                int n = (int) Math.min(chunkRows, rows - first);
                long[] draw = n == chunkRows ? indices : new long[n];
                for (int i = 0; i < n; i++) {
                    draw[i] = random.nextLong(source.size());
                }
                MemorySegment slice = chunk.asSlice(0, n * rowBytes);
                source.readBatch(draw, slice);
                writer.writeRows(first, slice);
                progress.step(((first + n) * rowBytes >> 20) - (first * rowBytes >> 20));
            }
            return writer.commit();
        }
    }
}
