package dev.memfit.plot;

import tech.tablesaw.api.BooleanColumn;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.IntColumn;
import tech.tablesaw.api.LongColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;
import tech.tablesaw.columns.Column;

import tech.tablesaw.columns.numbers.NumberColumnFormatter;

import java.lang.reflect.RecordComponent;
import java.math.BigDecimal;
import java.math.MathContext;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.util.Locale;
import java.util.ArrayList;
import java.util.List;

/**
 * Results as a table to {@code display}: one row per record, one column per component, named after it.
 *
 * <pre>{@code
 * record Run(String method, double seconds, long peakMiB) { }
 * display(Tables.of("Three ways to read the same file", List.of(new Run("mapped", 1.2, 40), new Run("lazy", 3.4, 12))));
 * }</pre>
 */
public final class Tables {

    private Tables() {
    }

    /**
     * A table of records of one type.
     *
     * @param title the table's name, shown above it
     * @param rows the records, at least one
     * @return the table
     * @throws IllegalArgumentException when there are no rows (the columns would be unknown)
     */
    public static Table of(String title, List<? extends Record> rows) {
        if (rows.isEmpty()) {
            throw new IllegalArgumentException(title + ": no rows to make columns from");
        }
        RecordComponent[] components = rows.getFirst().getClass().getRecordComponents();
        List<Column<?>> columns = new ArrayList<>();
        for (RecordComponent component : components) {
            columns.add(column(component, rows));
        }
        return Table.create(title, columns);
    }

    private static Column<?> column(RecordComponent component, List<? extends Record> rows) {
        String name = component.getName();
        Class<?> type = component.getType();
        if (type == double.class || type == float.class || type == Double.class || type == Float.class) {
            DoubleColumn column = DoubleColumn.create(name);
            rows.forEach(row -> column.append(((Number) value(component, row)).doubleValue()));
            column.setPrintFormatter(new NumberColumnFormatter(new Readable()));
            return column;
        }
        if (type == long.class || type == Long.class) {
            LongColumn column = LongColumn.create(name);
            rows.forEach(row -> column.append((Long) value(component, row)));
            return column;
        }
        if (type == int.class || type == Integer.class || type == short.class || type == byte.class) {
            IntColumn column = IntColumn.create(name);
            rows.forEach(row -> column.append(((Number) value(component, row)).intValue()));
            return column;
        }
        if (type == boolean.class || type == Boolean.class) {
            BooleanColumn column = BooleanColumn.create(name);
            rows.forEach(row -> column.append((Boolean) value(component, row)));
            return column;
        }
        StringColumn column = StringColumn.create(name);
        rows.forEach(row -> column.append(String.valueOf(value(component, row))));
        return column;
    }

    /**
     * Measured numbers as people read them: thousands grouped without decimals from 1,000 up, three decimals at most
     * from 1 up, four significant digits below (0.0001234), never a float's full 17 digits.
     */
    static final class Readable extends NumberFormat {
        @Override
        public StringBuffer format(double number, StringBuffer to, FieldPosition position) {
            double magnitude = Math.abs(number);
            if (Double.isNaN(number) || Double.isInfinite(number)) {
                return to.append(number);
            }
            if (magnitude >= 1000) {
                return to.append(String.format(Locale.ROOT, "%,.0f", number));
            }
            if (magnitude >= 1 || number == 0) {
                return to.append(new BigDecimal(String.format(Locale.ROOT, "%.3f", number)).stripTrailingZeros()
                        .toPlainString());
            }
            return to.append(new BigDecimal(number).round(new MathContext(4)).stripTrailingZeros().toPlainString());
        }

        @Override
        public StringBuffer format(long number, StringBuffer to, FieldPosition position) {
            return to.append(String.format(Locale.ROOT, "%,d", number));
        }

        @Override
        public Number parse(String source, ParsePosition position) {
            throw new UnsupportedOperationException("a display format");
        }
    }

    private static Object value(RecordComponent component, Record row) {
        try {
            var accessor = component.getAccessor();
            accessor.setAccessible(true);
            return accessor.invoke(row);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read " + component.getName() + " of " + row, e);
        }
    }
}
