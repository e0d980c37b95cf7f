package dev.memfit.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code memfit bench startup} measures both commands in fresh JVMs: its table holds a time to the first request. */
class BenchStartupTest {

    @Test
    void measuresTheLocalAndTheS3Inspect(@TempDir Path dir) {
        CliRun run = CliRun.of("bench", "startup", "--runs", "1", "--work", dir.toString());
        assertEquals(0, run.status(), run.err());
        Matcher s3 = Pattern.compile("inspect s3://bench/tiny.npy \\(empty cache\\)\\s*\\|\\s*([0-9.]+)\\s*\\|\\s*([0-9.]+)")
                .matcher(run.out());
        assertTrue(s3.find(), run.out());
        double toRequest = Double.parseDouble(s3.group(1));
        double toExit = Double.parseDouble(s3.group(2));
        assertTrue(toRequest > 0 && toRequest < toExit, run.out());
        assertTrue(run.out().contains("inspect tiny.npy (local)"), run.out());
    }
}
