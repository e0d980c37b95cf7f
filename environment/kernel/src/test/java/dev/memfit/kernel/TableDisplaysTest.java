package dev.memfit.kernel;

import org.junit.jupiter.api.Test;
import org.rapaio.jupyter.kernel.display.table.DataType;
import org.rapaio.jupyter.kernel.display.table.TableDisplay;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.LongColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

import java.util.ServiceLoader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A Tablesaw table reaches the kernel's table renderer with its columns, types and values; the kernel finds the provider. */
class TableDisplaysTest {

    @Test
    void aTablesawTableBecomesTheKernelsTable() {
        Table table = Table.create("runs", StringColumn.create("method", "mapped", "lazy"),
                DoubleColumn.create("seconds", 1.25, 3.5), LongColumn.create("bytes", 40L, 12L));
        var transformer = new TableDisplays.TablesawTransformer();
        assertTrue(transformer.canTransform(table));
        assertFalse(transformer.canTransform("a string"));
        TableDisplay shown = (TableDisplay) transformer.transform(table);
        assertEquals(2, shown.getRows());
        assertEquals(3, shown.getCols());
        assertEquals("seconds", shown.columnName(1));
        assertEquals(DataType.STRING, shown.columnType(0));
        assertEquals(DataType.FLOAT, shown.columnType(1));
        assertEquals(DataType.INTEGER, shown.columnType(2));
        assertEquals("lazy", shown.getValue(1, 0));
        assertEquals("12", shown.getValue(1, 2));
        assertTrue(ServiceLoader.load(org.rapaio.jupyter.kernel.display.spi.DisplayProvider.class).stream()
                .anyMatch(p -> p.type() == TableDisplays.class), "registered for ServiceLoader");
    }
}
