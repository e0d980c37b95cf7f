package dev.memfit.bench;

import dev.memfit.MemfitException;
import dev.memfit.io.storage.AtomicMove;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Data files written by numpy itself ({@code /usr/bin/python3}), for benchmarks and notebooks that must start from what
 * users bring rather than from memfit's own writer.
 */
public final class NumpyFiles {

    private NumpyFiles() {
    }

    /**
     * Writes {@code rows x columns} standard normal float32 values with {@code np.save} and its defaults
     * ({@code np.random.default_rng(seed)}), under a temporary name first; a file of the right size already there is
     * kept.
     *
     * @param file the {@code .npy} to write
     * @param rows rows
     * @param columns values per row
     * @param seed numpy's seed
     * @return the file
     * @throws MemfitException when numpy is not available
     */
    public static Path randomFloat32(Path file, long rows, long columns, long seed) {
        long expected = rows * columns * Float.BYTES;
        try {
            // np.save's header takes 128 bytes (a multiple of 64 for wide shapes)
            if (Files.exists(file) && Files.size(file) > expected && Files.size(file) <= expected + 4096) {
                return file;
            }
            if (file.toAbsolutePath().getParent() != null) {
                Files.createDirectories(file.toAbsolutePath().getParent());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare " + file, e);
        }
        Path temporary = Path.of(file + ".partial.npy");
        String script = "import sys, numpy as np\n"
                + "rows, columns, seed = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])\n"
                + "np.save(sys.argv[1], np.random.default_rng(seed).standard_normal((rows, columns), dtype=np.float32))\n";
        if (Baselines.run(List.of("/usr/bin/python3", "-c", script, temporary.toString(), Long.toString(rows),
                Long.toString(columns), Long.toString(seed)), 3600).isEmpty()) {
            throw new MemfitException("cannot write " + file + " with numpy: this needs /usr/bin/python3 with numpy "
                    + "(apt-get install python3-numpy)");
        }
        try {
            AtomicMove.replace(temporary, file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot move numpy's file into place: " + file, e);
        }
        return file;
    }
}
