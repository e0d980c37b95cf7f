package dev.memfit.bench;

import dev.memfit.DType;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ./memfit bench disk} on a small {@code .npy}: every row comes back in its role, the prediction as a range
 * (the most and the least an epoch after the first reads) and each epoch delivers the whole file. No speed is asserted.
 */
class DiskEpochsTest {

    @Test
    void theRowsComeBackByRoleWithThePredictionAsARange(@TempDir Path dir) throws Exception {
        int rows = 2_048;
        int columns = 256;
        float[] values = new float[rows * columns];
        for (int i = 0; i < values.length; i++) {
            values[i] = i % 97;
        }
        Path file = dir.resolve("rows.npy");
        Npy.write(file, NpyHeader.of(DType.FLOAT32, rows, columns), MemorySegment.ofArray(values));
        long dataBytes = (long) rows * columns * Float.BYTES;

        List<DiskEpochs.Row> measured = DiskEpochs.run(new DiskEpochs.Settings(file, 64, 3, 0.25, 20, 1, 7));
        DiskEpochs.Summary summary = DiskEpochs.Summary.of(measured);

        assertEquals(Files.size(file), summary.sequentialCold().bytes(), "the storage's read covers the file");
        assertNotNull(summary.sequentialAgain());
        assertEquals(20, summary.randomReads().operations());
        DiskEpochs.Row most = summary.predicted();
        DiskEpochs.Row least = summary.predictedLeast();
        assertNotNull(most, "the prediction's upper row");
        assertNotNull(least, "the prediction's lower row");
        assertTrue(least.readFromStorage() <= most.readFromStorage() && most.readFromStorage() <= Files.size(file),
                least.readFromStorage() + " <= " + most.readFromStorage() + " <= the file");
        assertTrue(least.seconds() <= most.seconds(), least.seconds() + " <= " + most.seconds());
        assertEquals(3, summary.fileOrder().size(), "three epochs in file order, none taken for a prediction");
        for (DiskEpochs.Row epoch : summary.fileOrder()) {
            assertEquals(dataBytes, epoch.bytes(), epoch.what() + " delivers every row");
            assertEquals(rows, epoch.operations());
        }
        assertEquals(rows / 4, summary.shuffled().operations(), "a quarter of the rows shuffled");
        assertTrue(summary.bestLaterEpoch().what().endsWith("epoch 2") || summary.bestLaterEpoch().what().endsWith("epoch 3"));
    }
}
