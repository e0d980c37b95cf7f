package dev.memfit.kernel;

import org.rapaio.jupyter.kernel.display.DisplayRenderer;
import org.rapaio.jupyter.kernel.display.DisplayTransformer;
import org.rapaio.jupyter.kernel.display.spi.DisplayProvider;
import org.rapaio.jupyter.kernel.display.table.DataType;
import org.rapaio.jupyter.kernel.display.table.TableDisplay;
import org.rapaio.jupyter.kernel.display.table.TableDisplayWrapper;

import java.lang.reflect.Method;
import java.util.List;

/**
 * Shows a Tablesaw {@code Table} (what the notebooks' {@code Tables.of} returns) as an HTML table, through the rapaio
 * kernel's table renderer; without it the kernel shows the table's text as HTML, which collapses its spacing. Found by
 * the kernel through {@code ServiceLoader}. Tablesaw is on the notebooks' class path, not the kernel's, so the table
 * is read by reflection (its public {@code rowCount}, {@code columnCount}, {@code column(i).name()}, {@code type()}
 * and {@code getString(row)}).
 */
public final class TableDisplays implements DisplayProvider {

    @Override
    public List<DisplayRenderer> getDisplayRenderers() {
        return List.of();
    }

    @Override
    public List<DisplayTransformer> getDisplayTransformers() {
        return List.of(new TablesawTransformer());
    }

    /** A Tablesaw table as the kernel's table display. */
    static final class TablesawTransformer implements DisplayTransformer {

        @Override
        public boolean canTransform(Object o) {
            return o != null && o.getClass().getName().equals("tech.tablesaw.api.Table");
        }

        @Override
        public Class<?> transformedClass() {
            return TableDisplay.class;
        }

        @Override
        public Object transform(Object table) {
            try {
                int rows = (int) call(table, "rowCount");
                int columns = (int) call(table, "columnCount");
                TableDisplayWrapper display = new TableDisplayWrapper().withHasHeader(true);
                for (int c = 0; c < columns; c++) {
                    Object column = table.getClass().getMethod("column", int.class).invoke(table, c);
                    String name = (String) call(column, "name");
                    String type = String.valueOf(call(column, "type"));
                    DataType kind = type.contains("DOUBLE") || type.contains("FLOAT") ? DataType.FLOAT
                            : type.contains("INT") || type.contains("LONG") || type.contains("SHORT") ? DataType.INTEGER
                            : DataType.STRING;
                    Method cell = column.getClass().getMethod("getString", int.class);
                    display.withColumn(name, kind, rows, row -> {
                        try {
                            return cell.invoke(column, row);
                        } catch (ReflectiveOperationException e) {
                            return "?";
                        }
                    });
                }
                return display;
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot show " + table.getClass().getName() + " as a table", e);
            }
        }

        private static Object call(Object target, String method) throws ReflectiveOperationException {
            Method m = target.getClass().getMethod(method);
            m.setAccessible(true);
            return m.invoke(target);
        }
    }
}
