package dev.memfit.io.mrc;

import dev.memfit.Fuzzing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The stacks that the STAR and {@code .txt} fuzz seeds name, written once per JVM into a temporary folder (see
 * {@code src/test/fuzz/make_seeds.py}): {@code a.mrcs} 2 images 4x4, {@code b.mrcs} 1 image 3x3, {@code s.mrc}
 * 1 image 4x4, {@code my stack.mrcs} 2 images 4x4, {@code d/e.mrcs} 3 images 4x4, {@code c.mrcs} truncated and
 * {@code f.mrcs} a folder.
 */
final class StackFixtures {

    /** The folder holding the fixtures; listings are written here too. */
    static final Path FOLDER = write();
    /** The bytes of all fixture stacks together: what one open may read besides the listing, per mention. */
    static final long STACK_BYTES;

    static {
        try (var files = Files.walk(FOLDER)) {
            STACK_BYTES = files.filter(Files::isRegularFile).mapToLong(f -> f.toFile().length()).sum();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private StackFixtures() {
    }

    private static Path write() {
        Path folder = Fuzzing.tempFolder("memfit-fuzz-stacks");
        try {
            stack(folder.resolve("a.mrcs"), 4, 4, 2);
            stack(folder.resolve("b.mrcs"), 3, 3, 1);
            stack(folder.resolve("s.mrc"), 4, 4, 1);
            stack(folder.resolve("my stack.mrcs"), 4, 4, 2);
            Files.createDirectories(folder.resolve("d"));
            stack(folder.resolve("d/e.mrcs"), 4, 4, 3);
            Path truncated = stack(folder.resolve("c.mrcs"), 4, 4, 2);
            try (var channel = Files.newByteChannel(truncated, StandardOpenOption.WRITE)) {
                channel.truncate(Files.size(truncated) - 10);
            }
            Files.createDirectories(folder.resolve("f.mrcs"));
            return folder;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path stack(Path file, int nx, int ny, int nz) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment images = arena.allocate((long) nx * ny * nz * Float.BYTES);
            for (long i = 0; i < (long) nx * ny * nz; i++) {
                images.setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
            }
            return Mrc.write(file, MrcHeader.builder().setWidth(nx).setHeight(ny).setImages(nz).build(), images);
        }
    }
}
