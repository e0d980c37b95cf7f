package dev.memfit.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ./memfit bench cloud} at a few MiB: every row measured, and the cold epoch moving each byte of the object
 * over the link once (its blocks once each; the header's first read, at most 64 KiB, on top). No speed is asserted here.
 */
class CloudBenchmarkTest {

    @Test
    void everyRowIsMeasuredAndTheColdEpochDownloadsTheObjectOnce(@TempDir Path dir) {
        // 4 MiB in blocks of 1 MiB (more than twice the 64 KiB head, so the header goes straight to the server)
        CloudBenchmark.Result result = CloudBenchmark.run(new CloudBenchmark.Settings(dir, 4L << 20, 256, 64, 2,
                1 << 20, 4, Duration.ofMillis(1), 400L << 20, 1, 3));
        List<CloudBenchmark.Row> rows = result.rows();
        assertEquals(List.of("cold epoch (shuffled) vs the link", "plain parallel GETs vs the link (this machine's ceiling)",
                "warm epoch (file order) vs local file", "opening: staged copy checked vs local file",
                "random batches, fully cached vs mapped",
                "random batches in blocks, fully cached vs local"), rows.stream().map(CloudBenchmark.Row::measure).toList());
        for (CloudBenchmark.Row row : rows) {
            assertTrue(Double.isFinite(row.ratio()) && row.ratio() > 0, row.toString());
        }
        // the staged object and the local file are read by the same mapped reader
        assertEquals("mapped() staged in the cache", rows.get(4).memfit());
        assertEquals("mapped() local file", rows.get(4).reference());
        assertEquals(0, rows.get(3).target(), "the opening is reported, without a target");
        long downloaded = result.cold().bytesDownloaded();
        // the header's read (up to 64 KiB, read directly while block 0 is not cached) comes on top of the blocks
        assertTrue(downloaded > result.dataBytes() && downloaded <= result.dataBytes() + (64 << 10),
                downloaded + " bytes downloaded for an object of " + result.dataBytes());
        assertEquals(0, result.cold().evictedBlocks(), result.cold().toString());
        assertEquals(0, result.cold().corruptBlocks(), result.cold().toString());
    }
}
