package dev.memfit.cli;

import dev.memfit.InvalidFileException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The one line for each kind of failure, from the exceptions the JDK throws (those a root test cannot provoke, like
 * permission denied, included); {@link BadInputTableTest} runs the real commands.
 */
class FailuresTest {

    @Test
    void environmentFailuresNameTheFileAndTheReason() {
        Path out = Path.of("/data/out.npy");
        assertEquals("cannot create /data/out.npy: /data/.out.npy.1.partial: permission denied; choose a location you can"
                        + " write to, or change its permissions",
                Failures.describe(new UncheckedIOException("cannot create " + out,
                        new AccessDeniedException("/data/.out.npy.1.partial")), out));
        assertEquals("cannot finish /data/out.npy: No space left on device; free space on that file system, or write"
                        + " somewhere else",
                Failures.describe(new UncheckedIOException("cannot finish " + out, new IOException("No space left on device")), out));
        // a wrapper made with only a cause ("java.nio.file.NoSuchFileException: /x") adds nothing but the class name
        assertEquals("/x: no such file or directory",
                Failures.describe(new UncheckedIOException(new NoSuchFileException("/x")), null));
        assertEquals("cannot write shards to /s: not a directory",
                Failures.describe(new UncheckedIOException("cannot write shards to /s",
                        new FileSystemException("/s", null, "not a directory")), null));
        assertEquals("writing /data/shards failed: the disk is probably full (a mapped write faulted); free space on that"
                        + " file system, or write somewhere else",
                Failures.describe(new InternalError("a fault occurred in an unsafe memory access operation"), Path.of("/data/shards")));
    }

    @Test
    void badInputIsItsMessageOnOneLine() {
        assertEquals("/a.h5ad: expected X, found Y z",
                Failures.describe(new InvalidFileException(Path.of("/a.h5ad"), -1, "X", "Y\n  z"), null));
        assertEquals("/a.h5ad: expected X, found Y: Input/output error",
                Failures.describe(new InvalidFileException(Path.of("/a.h5ad"), -1, "X", "Y", new IOException("Input/output error")), null));
    }

    @Test
    void anythingElseIsAnInternalErrorWithTheHint() {
        assertEquals("internal error: java.lang.IllegalStateException: boom (run with --stacktrace and report it)",
                Failures.describe(new IllegalStateException("boom"), null));
        assertEquals("out of memory (Java heap space); give Java more with MEMFIT_JAVA_OPTS=-Xmx<size> (e.g. -Xmx8g), or"
                + " ask for smaller batches or chunks", Failures.describe(new OutOfMemoryError("Java heap space"), null));
    }
}
