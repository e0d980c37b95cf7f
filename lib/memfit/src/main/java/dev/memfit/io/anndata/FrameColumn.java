package dev.memfit.io.anndata;

import dev.memfit.DType;

import java.util.Arrays;
import java.util.Locale;
import java.util.TreeSet;

/**
 * One column of an AnnData dataframe ({@code obs} or {@code var}) with its type, as anndata stores it: what memfit
 * carries from one file to another without changing a value or a type. {@link AnnData#frameColumns} reads them
 * (from an {@code .h5ad} or a {@code .zarr} store alike), {@code H5adWriter.obs(String, FrameColumn)} writes them,
 * {@link #subset} keeps some rows (the selected genes of a preprocessing run, the cells of a shard).
 *
 * <p>The kinds are those of pandas columns anndata writes: {@link Numbers} (numpy's signed and unsigned integers of
 * every width, float32, float64), {@link Bools}, {@link Strings}, {@link Categorical} (codes of a given width into
 * typed categories in their order, ordered or not) and {@link Nullable} (pandas' {@code Int64}/{@code boolean}:
 * values and a mask). Each holds Java arrays, not copied: treat them as read-only.
 */
public sealed interface FrameColumn permits FrameColumn.Numbers, FrameColumn.Bools, FrameColumn.Strings,
        FrameColumn.Categorical, FrameColumn.Nullable {

    /**
     * The number of rows.
     *
     * @return rows
     */
    int size();

    /**
     * The column of some rows, in the order given; a categorical keeps all its categories (in their order), so that
     * the codes keep their meaning and the type stays the same.
     *
     * @param rows row numbers in {@code [0, size())}, repeats allowed
     * @return a new column of {@code rows.length} rows, of the same kind and type
     */
    FrameColumn subset(int[] rows);

    /**
     * The column of consecutive rows.
     *
     * @param first the first row
     * @param count how many rows
     * @return a new column of the same kind and type
     */
    default FrameColumn range(int first, int count) {
        if (first < 0 || count < 0 || first + count > size()) {
            throw new IndexOutOfBoundsException("rows [" + first + ", " + (first + count) + ") outside [0, " + size() + ")");
        }
        int[] rows = new int[count];
        Arrays.setAll(rows, i -> first + i);
        return subset(rows);
    }

    /**
     * The type as a person names it: numpy's names ({@code uint8}, {@code float32}, {@code bool}), {@code string},
     * {@code categorical(int8 codes, 3 string categories, ordered)}, {@code nullable-integer(int64)}.
     *
     * @return the description
     */
    String typeName();

    /**
     * The values as labels, for those who read a column as numbers or names (lossy: integers become float64):
     * a {@code String[]} for strings, categoricals (the category of each row, {@code null} when missing, numeric
     * categories as Java prints them) and nullable booleans ("True", "False" or {@code null}), a {@code boolean[]} for
     * booleans, a {@code double[]} for numbers and nullable integers (NaN when missing). {@link AnnData#columns} returns
     * these; carry the column itself to keep its type.
     *
     * @return the label view
     */
    Object labels();

    /**
     * Numbers of one numpy type. The array's element type is the storage: {@code byte[]} for int8 and uint8,
     * {@code short[]} for int16 and uint16, {@code int[]} for int32 and uint32, {@code long[]} for int64 and uint64
     * (unsigned values as their bit pattern), {@code float[]} for float32, {@code double[]} for float64.
     *
     * @param dtype the numpy type
     * @param values the array of the storage type
     */
    record Numbers(DType dtype, Object values) implements FrameColumn {

        /** Checks that the array is the storage of the type. */
        public Numbers {
            Class<?> expected = storage(dtype);
            if (values == null || values.getClass() != expected) {
                throw new IllegalArgumentException(dtype + " values are stored as " + expected.getSimpleName() + ", not "
                        + (values == null ? "null" : values.getClass().getSimpleName()));
            }
        }

        /** The Java array type holding a numpy type. */
        static Class<?> storage(DType dtype) {
            return switch (dtype) {
                case INT8, UINT8 -> byte[].class;
                case INT16, UINT16 -> short[].class;
                case INT32, UINT32 -> int[].class;
                case INT64, UINT64 -> long[].class;
                case FLOAT32 -> float[].class;
                case FLOAT64 -> double[].class;
                default -> throw new IllegalArgumentException("a dataframe column of numbers is an integer, float32 or "
                        + "float64 type, not " + dtype);
            };
        }

        /**
         * float64 numbers.
         *
         * @param values the numbers
         * @return the column
         */
        public static Numbers of(double[] values) {
            return new Numbers(DType.FLOAT64, values);
        }

        /**
         * float32 numbers.
         *
         * @param values the numbers
         * @return the column
         */
        public static Numbers of(float[] values) {
            return new Numbers(DType.FLOAT32, values);
        }

        /**
         * int32 numbers.
         *
         * @param values the numbers
         * @return the column
         */
        public static Numbers of(int[] values) {
            return new Numbers(DType.INT32, values);
        }

        /**
         * int64 numbers.
         *
         * @param values the numbers
         * @return the column
         */
        public static Numbers of(long[] values) {
            return new Numbers(DType.INT64, values);
        }

        /**
         * Whether the type is an integer type.
         *
         * @return true for int8 to uint64
         */
        public boolean isInteger() {
            return dtype != DType.FLOAT32 && dtype != DType.FLOAT64;
        }

        /**
         * Whether the type is an unsigned integer type.
         *
         * @return true for uint8 to uint64
         */
        public boolean isUnsigned() {
            return dtype == DType.UINT8 || dtype == DType.UINT16 || dtype == DType.UINT32 || dtype == DType.UINT64;
        }

        /**
         * An integer value, unsigned ones widened (a uint64 as its bit pattern); a float is truncated.
         *
         * @param row the row
         * @return the value
         */
        public long longAt(int row) {
            return switch (values) {
                case byte[] a -> dtype == DType.UINT8 ? Byte.toUnsignedLong(a[row]) : a[row];
                case short[] a -> dtype == DType.UINT16 ? Short.toUnsignedLong(a[row]) : a[row];
                case int[] a -> dtype == DType.UINT32 ? Integer.toUnsignedLong(a[row]) : a[row];
                case long[] a -> a[row];
                case float[] a -> (long) a[row];
                case double[] a -> (long) a[row];
                default -> throw new IllegalStateException();
            };
        }

        /**
         * A value as float64 (exact for floats and integers up to 2^53; a uint64 read as unsigned).
         *
         * @param row the row
         * @return the value
         */
        public double doubleAt(int row) {
            return switch (values) {
                case float[] a -> a[row];
                case double[] a -> a[row];
                case long[] a when dtype == DType.UINT64 -> a[row] >= 0 ? a[row] : (a[row] >>> 1 | (a[row] & 1)) * 2.0;
                default -> longAt(row);
            };
        }

        /**
         * A value as Java prints it (a uint64 as unsigned).
         *
         * @param row the row
         * @return the text
         */
        public String textAt(int row) {
            return switch (values) {
                case float[] a -> Float.toString(a[row]);
                case double[] a -> Double.toString(a[row]);
                case long[] a when dtype == DType.UINT64 -> Long.toUnsignedString(a[row]);
                default -> Long.toString(longAt(row));
            };
        }

        @Override
        public int size() {
            return java.lang.reflect.Array.getLength(values);
        }

        @Override
        public Numbers subset(int[] rows) {
            int n = rows.length;
            Object picked = switch (values) {
                case byte[] a -> { byte[] b = new byte[n]; for (int i = 0; i < n; i++) b[i] = a[rows[i]]; yield b; }
                case short[] a -> { short[] b = new short[n]; for (int i = 0; i < n; i++) b[i] = a[rows[i]]; yield b; }
                case int[] a -> { int[] b = new int[n]; for (int i = 0; i < n; i++) b[i] = a[rows[i]]; yield b; }
                case long[] a -> { long[] b = new long[n]; for (int i = 0; i < n; i++) b[i] = a[rows[i]]; yield b; }
                case float[] a -> { float[] b = new float[n]; for (int i = 0; i < n; i++) b[i] = a[rows[i]]; yield b; }
                case double[] a -> { double[] b = new double[n]; for (int i = 0; i < n; i++) b[i] = a[rows[i]]; yield b; }
                default -> throw new IllegalStateException();
            };
            return new Numbers(dtype, picked);
        }

        @Override
        public String typeName() {
            return dtype.name().toLowerCase(Locale.ROOT);
        }

        @Override
        public double[] labels() {
            double[] numbers = new double[size()];
            for (int i = 0; i < numbers.length; i++) {
                numbers[i] = doubleAt(i);
            }
            return numbers;
        }

        @Override
        public String toString() {
            return typeName() + "[" + size() + "]";
        }
    }

    /**
     * numpy bools (h5py stores them as an HDF5 enum {@code FALSE/TRUE}).
     *
     * @param values one per row
     */
    record Bools(boolean[] values) implements FrameColumn {

        @Override
        public int size() {
            return values.length;
        }

        @Override
        public Bools subset(int[] rows) {
            boolean[] picked = new boolean[rows.length];
            for (int i = 0; i < rows.length; i++) {
                picked[i] = values[rows[i]];
            }
            return new Bools(picked);
        }

        @Override
        public String typeName() {
            return "bool";
        }

        @Override
        public boolean[] labels() {
            return values;
        }

        @Override
        public String toString() {
            return "bool[" + size() + "]";
        }
    }

    /**
     * Strings (anndata's {@code string-array}: pandas object columns of distinct strings; repeated ones anndata turns
     * into categoricals when writing).
     *
     * @param values one per row, none null
     */
    record Strings(String[] values) implements FrameColumn {

        /** Refuses a missing string: anndata's string arrays have none. */
        public Strings {
            for (int i = 0; i < values.length; i++) {
                if (values[i] == null) {
                    throw new IllegalArgumentException("string " + i + " is null: a missing label is a categorical's -1 code");
                }
            }
        }

        @Override
        public int size() {
            return values.length;
        }

        @Override
        public Strings subset(int[] rows) {
            String[] picked = new String[rows.length];
            for (int i = 0; i < rows.length; i++) {
                picked[i] = values[rows[i]];
            }
            return new Strings(picked);
        }

        @Override
        public String typeName() {
            return "string";
        }

        @Override
        public String[] labels() {
            return values;
        }

        @Override
        public String toString() {
            return "string[" + size() + "]";
        }
    }

    /**
     * A pandas categorical: per row a code into the categories, -1 for a missing value.
     *
     * @param codes signed integers (int8 for up to 127 categories, as pandas picks them; wider for more)
     * @param categories the categories in their order: {@link Strings} or {@link Numbers}
     * @param ordered whether the order of the categories is meaningful ({@code pd.Categorical(ordered=True)})
     */
    record Categorical(Numbers codes, FrameColumn categories, boolean ordered) implements FrameColumn {

        /** Checks the codes' type and range and the categories' kind. */
        public Categorical {
            if (!codes.isInteger() || codes.isUnsigned()) {
                throw new IllegalArgumentException("categorical codes are signed integers, not " + codes.typeName());
            }
            if (!(categories instanceof Strings) && !(categories instanceof Numbers)) {
                throw new IllegalArgumentException("categories are strings or numbers, not " + categories.typeName());
            }
            int n = categories.size();
            for (int i = 0; i < codes.size(); i++) {
                long code = codes.longAt(i);
                if (code < -1 || code >= n) {
                    throw new IllegalArgumentException("code " + code + " at row " + i + " outside [-1, " + n + ")");
                }
            }
        }

        /**
         * A categorical of labels, as memfit has always written a {@code String[]}: the distinct labels sorted as
         * categories, unordered, int8 codes below 127 categories and int32 above, {@code null} as -1.
         *
         * @param labels one per row, null for missing
         * @return the column
         */
        public static Categorical ofLabels(String[] labels) {
            String[] sorted = new TreeSet<>(Arrays.stream(labels).filter(java.util.Objects::nonNull).toList())
                    .toArray(String[]::new);
            java.util.Map<String, Integer> code = new java.util.HashMap<>();
            for (int i = 0; i < sorted.length; i++) {
                code.put(sorted[i], i);
            }
            Numbers codes;
            if (sorted.length < Byte.MAX_VALUE) {
                byte[] small = new byte[labels.length];
                for (int i = 0; i < labels.length; i++) {
                    small[i] = (byte) (labels[i] == null ? -1 : code.get(labels[i]));
                }
                codes = new Numbers(DType.INT8, small);
            } else {
                int[] wide = new int[labels.length];
                for (int i = 0; i < labels.length; i++) {
                    wide[i] = labels[i] == null ? -1 : code.get(labels[i]);
                }
                codes = new Numbers(DType.INT32, wide);
            }
            return new Categorical(codes, new Strings(sorted), false);
        }

        /**
         * A row's code.
         *
         * @param row the row
         * @return the index into the categories, -1 when missing
         */
        public int codeAt(int row) {
            return (int) codes.longAt(row);
        }

        @Override
        public int size() {
            return codes.size();
        }

        @Override
        public Categorical subset(int[] rows) {
            return new Categorical(codes.subset(rows), categories, ordered);
        }

        @Override
        public String typeName() {
            return "categorical(" + codes.typeName() + " codes, " + categories.size() + " "
                    + (categories instanceof Strings ? "string" : categories.typeName()) + " categories"
                    + (ordered ? ", ordered" : "") + ")";
        }

        @Override
        public String[] labels() {
            String[] names = new String[size()];
            for (int i = 0; i < names.length; i++) {
                int code = codeAt(i);
                names[i] = code < 0 ? null : categories instanceof Strings s ? s.values()[code]
                        : categoryText((Numbers) categories, code);
            }
            return names;
        }

        /** Integer categories as pandas prints them ({@code 30}, not {@code 30.0}). */
        private static String categoryText(Numbers numbers, int code) {
            return numbers.textAt(code);
        }

        @Override
        public String toString() {
            return typeName() + "[" + size() + "]";
        }
    }

    /**
     * A pandas nullable column (anndata's {@code nullable-integer}, {@code nullable-boolean}): values and a mask
     * that is true where a value is missing.
     *
     * @param values integer {@link Numbers} or {@link Bools}
     * @param mask one per row, true where missing; null when the file stores none (every value present)
     */
    record Nullable(FrameColumn values, boolean[] mask) implements FrameColumn {

        /** Checks the values' kind and the mask's length. */
        public Nullable {
            if (!(values instanceof Bools) && !(values instanceof Numbers n && n.isInteger())) {
                throw new IllegalArgumentException("nullable values are integers or bools, not " + values.typeName());
            }
            if (mask != null && mask.length != values.size()) {
                throw new IllegalArgumentException("a mask of " + mask.length + " for " + values.size() + " values");
            }
        }

        /**
         * Whether a row's value is missing.
         *
         * @param row the row
         * @return true when masked
         */
        public boolean isMissing(int row) {
            return mask != null && mask[row];
        }

        /**
         * Whether the values are bools ({@code nullable-boolean}) rather than integers ({@code nullable-integer}).
         *
         * @return true for bools
         */
        public boolean isBoolean() {
            return values instanceof Bools;
        }

        @Override
        public int size() {
            return values.size();
        }

        @Override
        public Nullable subset(int[] rows) {
            boolean[] picked = null;
            if (mask != null) {
                picked = new boolean[rows.length];
                for (int i = 0; i < rows.length; i++) {
                    picked[i] = mask[rows[i]];
                }
            }
            return new Nullable(values.subset(rows), picked);
        }

        @Override
        public String typeName() {
            return isBoolean() ? "nullable-boolean" : "nullable-integer(" + values.typeName() + ")";
        }

        @Override
        public Object labels() {
            if (values instanceof Bools flags) {
                String[] names = new String[size()];
                for (int i = 0; i < names.length; i++) {
                    names[i] = isMissing(i) ? null : flags.values()[i] ? "True" : "False";
                }
                return names;
            }
            Numbers numbers = (Numbers) values;
            double[] result = new double[size()];
            for (int i = 0; i < result.length; i++) {
                result[i] = isMissing(i) ? Double.NaN : numbers.doubleAt(i);
            }
            return result;
        }

        @Override
        public String toString() {
            return typeName() + "[" + size() + "]";
        }
    }
}
