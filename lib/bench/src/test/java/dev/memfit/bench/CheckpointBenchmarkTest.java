package dev.memfit.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The checkpoint benchmark's rows describe real checkpoints: their size is the model's and its optimizer's arrays. */
class CheckpointBenchmarkTest {

    @Test
    void aCheckpointHoldsTheParametersAndBothMomentsOfEachAndLittleElse(@TempDir Path dir) throws Exception {
        List<CheckpointBenchmark.Row> rows = CheckpointBenchmark.run(
                new CheckpointBenchmark.Settings(dir, List.of(3_000), 50, 5, 200, 3, false));
        assertEquals(1, rows.size());
        CheckpointBenchmark.Row row = rows.getFirst();
        // topic logits k x m and the document table n x k, each with Adam's first and second moments, float32
        long arrays = 3L * (5 * 50 + 3_000 * 5) * Float.BYTES;
        assertTrue(row.bytes() >= arrays && row.bytes() < arrays + 16 * 1024,
                row.bytes() + " bytes for " + arrays + " bytes of arrays (headers, state and step losses under 16 KiB)");
        assertTrue(row.writeSeconds() > 0 && row.stepSeconds() > 0 && row.resumeSeconds() > 0, row.toString());
        assertTrue(Double.isNaN(row.torchWriteSeconds()), "no baseline was asked for");
    }
}
