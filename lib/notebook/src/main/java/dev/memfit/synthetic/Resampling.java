package dev.memfit.synthetic;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.npy.NpyWriter;
import dev.memfit.source.SampleSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * Builds large data sets from small ones by sampling rows with replacement, writing in chunks so that memory stays
 * at one chunk whatever the output size (how notebook 03 makes a file many times the heap).
 *
 * <pre>{@code
 * Path big = Resampling.builder().setSource(corpus.counts()).setRows(10_000_000).optSeed(7).write(Path.of("big.npy"));
 * }</pre>
 */
public final class Resampling {

    private Resampling() {
    }

    /**
     * Starts configuring a resampling: {@code setSource} and {@code setRows} are required; defaults are seed 1, a
     * 64 MB staging buffer and a console progress bar.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures rows drawn uniformly with replacement; {@link #write(Path)} validates and writes them. */
    public static final class Builder {

        private SampleSource source;
        private long rows = -1;
        private long seed = 1;
        private long chunkBytes = 64L << 20;
        private ProgressListener progress = ProgressListener.console();

        private Builder() {
        }

        /**
         * Sets the rows to draw from (required; not closed).
         *
         * @param rowsToDrawFrom a source of at least one sample
         * @return this builder
         */
        public Builder setSource(SampleSource rowsToDrawFrom) {
            this.source = rowsToDrawFrom;
            return this;
        }

        /**
         * Sets the number of rows to write (required).
         *
         * @param count at least 0
         * @return this builder
         */
        public Builder setRows(long count) {
            this.rows = count;
            return this;
        }

        /**
         * Sets the seed of the draws (default 1).
         *
         * @param value the seed
         * @return this builder
         */
        public Builder optSeed(long value) {
            this.seed = value;
            return this;
        }

        /**
         * Sets the size of the staging buffer in native memory (default 64 MB): the memory the write needs.
         *
         * @param bytes at least 1 (a chunk holds at least one row whatever the size)
         * @return this builder
         */
        public Builder optChunkBytes(long bytes) {
            this.chunkBytes = bytes;
            return this;
        }

        /**
         * Sets where progress goes (default {@link ProgressListener#console()}), in MB written.
         *
         * @param listener the listener, such as {@link ProgressListener#silent()}
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
            return this;
        }

        /**
         * Validates the settings and writes the rows into a new {@code .npy}.
         *
         * @param output the {@code .npy} to create (written under a temporary name, renamed when complete)
         * @return the path written
         * @throws MemfitException naming the setting to change
         */
        public Path write(Path output) {
            if (output == null) {
                throw new MemfitException("write(output) needs the .npy file to write");
            }
            if (source == null) {
                throw new MemfitException("setSource(source) is required: the rows to draw from");
            }
            if (source.size() < 1) {
                throw new MemfitException("the source " + source.describe() + " has no rows to draw from");
            }
            if (rows < 0) {
                throw new MemfitException("setRows(n) is required, with n >= 0, got " + rows);
            }
            if (chunkBytes < 1) {
                throw new MemfitException("optChunkBytes needs at least 1 byte, got " + chunkBytes);
            }
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
            return rowsWithReplacement(this, output);
        }
    }

    private static Path rowsWithReplacement(Builder settings, Path output) {
        SampleSource source = settings.source;
        long rows = settings.rows;
        long rowBytes = source.sampleBytes();
        int chunkRows = (int) Math.max(1, Math.min(Integer.MAX_VALUE, settings.chunkBytes / rowBytes));
        long[] dims = new long[source.sampleShape().dimension() + 1];
        dims[0] = rows;
        System.arraycopy(source.sampleShape().getShape(), 0, dims, 1, dims.length - 1);
        SplittableRandom random = new SplittableRandom(settings.seed);
        try (Arena arena = Arena.ofConfined();
             NpyWriter writer = Npy.create(output, NpyHeader.of(source.dtype(), dims));
             ProgressListener.Task progress = settings.progress.start("Writing " + output.getFileName(), rows * rowBytes >> 20, "MiB")) {
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
