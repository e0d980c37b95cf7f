package dev.memfit.plot;

import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.source.ArraySource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tech.tablesaw.api.ColumnType;
import tech.tablesaw.api.Table;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Tables}, {@link Measure} and {@link Workspace}: what the notebooks use instead of formatted strings and loops. */
class NotebookHelpersTest {

    record Run(String method, double seconds, long bytes, int threads, boolean cached, Path where) {
    }

    @Test
    void aTableHasAColumnPerComponentWithItsType() {
        Table table = Tables.of("runs", List.of(new Run("mapped", 1.5, 1L << 40, 2, true, Path.of("a")),
                new Run("lazy", 3.25, 7, 4, false, Path.of("b"))));
        assertEquals("runs", table.name());
        assertEquals(List.of("method", "seconds", "bytes", "threads", "cached", "where"), table.columnNames());
        assertEquals(List.of(ColumnType.STRING, ColumnType.DOUBLE, ColumnType.LONG, ColumnType.INTEGER,
                ColumnType.BOOLEAN, ColumnType.STRING), table.columns().stream().map(c -> c.type()).toList());
        assertEquals(2, table.rowCount());
        assertEquals(3.25, table.doubleColumn("seconds").get(1));
        assertEquals(1L << 40, table.longColumn("bytes").get(0));
        assertEquals("b", table.stringColumn("where").get(1));
        assertThrows(IllegalArgumentException.class, () -> Tables.of("none", List.<Run>of()));
        // measured numbers printed as people read them, not with a double's 17 digits
        Table numbers = Tables.of("numbers", List.of(new Run("a", 0.8765088207985144, 0, 0, false, Path.of("a")),
                new Run("b", 1234567.891, 0, 0, false, Path.of("b")), new Run("c", 0.000123456, 0, 0, false, Path.of("c")),
                new Run("d", 3.5, 0, 0, false, Path.of("d")), new Run("e", 0, 0, 0, false, Path.of("e"))));
        assertEquals(List.of("0.8765", "1,234,568", "0.0001235", "3.5", "0"),
                List.of(numbers.doubleColumn("seconds").getString(0), numbers.doubleColumn("seconds").getString(1),
                        numbers.doubleColumn("seconds").getString(2), numbers.doubleColumn("seconds").getString(3),
                        numbers.doubleColumn("seconds").getString(4)));
    }

    @Test
    void epochsAreTimedAndCheckedToYieldEverySample() {
        try (ArraySource rows = ArraySource.allocate("rows", 100, new ai.djl.ndarray.types.Shape(3), dev.memfit.DType.FLOAT32);
             Loader loader = Datasets.of(rows).optBatchSize(7).optShuffle(1).build()) {
            var probe = dev.memfit.memory.MemoryProbe.start("epochs", java.time.Duration.ofMillis(5));
            double[] seconds = Measure.epochs(loader, 3, probe);
            var timeline = probe.stop();
            assertEquals(3, seconds.length);
            for (double s : seconds) {
                assertTrue(s > 0, "an epoch takes time: " + s);
            }
            assertEquals(List.of("epoch 1", "epoch 2", "epoch 3"), timeline.marks().stream().map(m -> m.label()).toList());
        }
        double fastest = Measure.fastest(3, () -> { });
        assertTrue(fastest >= 0 && fastest < 1, "fastest of three empty passes: " + fastest);
        var timed = Measure.timed(() -> 42);
        assertEquals(42, timed.value());
        var probed = Measure.probed("sleep", () -> {
            try {
                Thread.sleep(60);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return "done";
        });
        assertEquals("done", probed.value());
        long grew = Measure.added(probed.timeline(), dev.memfit.memory.MemorySample::heapUsed);
        assertEquals(probed.timeline().peakHeap() - probed.timeline().samples().getFirst().heapUsed(), grew);
        var onCpu = Measure.probed("cpu", ai.djl.Device.cpu(), probe -> probe.mark("one"));
        assertEquals(List.of("one"), onCpu.marks().stream().map(m -> m.label()).toList());
        assertTrue(Measure.liveHeap() > 0);
        assertTrue(probed.seconds() >= 0.04, "the timeline spans the work: " + probed.seconds());
    }

    @Test
    void aFreshFolderIsEmpty(@TempDir Path dir) throws Exception {
        Path folder = dir.resolve("work");
        Files.createDirectories(folder.resolve("a/b"));
        Files.writeString(folder.resolve("a/b/c.txt"), "x");
        assertEquals(folder, Workspace.fresh(folder));
        assertTrue(Files.isDirectory(folder));
        try (var left = Files.list(folder)) {
            assertFalse(left.findAny().isPresent());
        }
    }
}
