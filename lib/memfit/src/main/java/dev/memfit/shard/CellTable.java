package dev.memfit.shard;

import blue.strategic.parquet.Hydrator;
import blue.strategic.parquet.ParquetReader;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.anndata.FrameColumn;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.LocalOutputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;
import org.apache.parquet.schema.Types;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The cell table of a shard ({@code shard_NNNNNN.parquet}): one row per cell, {@code cell_id} (the obs index) then
 * the input's {@code obs} columns, each carried exactly.
 *
 * <p>Each column is a Parquet column of its own type: integers as {@code INT32}/{@code INT64} annotated with their
 * width and signedness ({@code INT(8, true)}, {@code INT(64, false)}, ...), float32 as {@code FLOAT}, float64 as
 * {@code DOUBLE}, bools as {@code BOOLEAN}, strings as {@code BINARY (STRING)}; a categorical as its category of each
 * cell (of the categories' type, null when missing), a nullable column as an optional column (null where masked).
 * What Parquet has no word for, the file's key-value metadata {@value #COLUMNS_KEY} records as JSON: per column its
 * anndata encoding, its numpy type, and for a categorical its codes' type, its categories in their order and whether
 * they are ordered. {@link #read} rebuilds the columns from both, as {@link dev.memfit.io.anndata.AnnData#frameColumns}
 * read them (a masked value of a nullable column comes back as 0: Parquet stores no value there).
 */
public final class CellTable {

    /** The key-value metadata entry that describes the columns. */
    public static final String COLUMNS_KEY = "memfit.obs";
    /** The column of cell names (the obs index). */
    public static final String CELL_ID = "cell_id";
    private static final ObjectMapper JSON = new ObjectMapper();

    private CellTable() {
    }

    /**
     * Writes the cell table of rows {@code [first, first + count)} of an input.
     *
     * @param target the {@code .parquet} to write (replaced)
     * @param barcodes the obs index
     * @param obs the obs columns
     * @param first the first row
     * @param count the rows
     * @throws IOException when the file cannot be written
     */
    static void write(Path target, String[] barcodes, Map<String, FrameColumn> obs, long first, long count)
            throws IOException {
        Types.MessageTypeBuilder schema = Types.buildMessage();
        schema.required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named(CELL_ID);
        ArrayNode described = JSON.createArrayNode();
        List<FrameColumn> columns = new ArrayList<>();
        for (Map.Entry<String, FrameColumn> entry : obs.entrySet()) {
            FrameColumn column = entry.getValue();
            columns.add(column);
            ObjectNode description = described.addObject().put("name", entry.getKey());
            switch (column) {
                case FrameColumn.Numbers numbers -> {
                    description.put("encoding", "array").put("dtype", numbers.typeName());
                    field(schema.required(physical(numbers.dtype())), numbers.dtype(), entry.getKey());
                }
                case FrameColumn.Bools ignored -> {
                    description.put("encoding", "array").put("dtype", "bool");
                    schema.required(PrimitiveTypeName.BOOLEAN).named(entry.getKey());
                }
                case FrameColumn.Strings ignored -> {
                    description.put("encoding", "string-array").put("dtype", "string");
                    schema.required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named(entry.getKey());
                }
                case FrameColumn.Categorical categorical -> {
                    description.put("encoding", "categorical").put("codes", categorical.codes().typeName())
                            .put("ordered", categorical.ordered());
                    ObjectNode categories = description.putObject("categories");
                    ArrayNode values = JSON.createArrayNode();
                    if (categorical.categories() instanceof FrameColumn.Strings names) {
                        categories.put("dtype", "string");
                        for (String name : names.values()) {
                            values.add(name);
                        }
                        schema.optional(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named(entry.getKey());
                    } else {
                        FrameColumn.Numbers numbers = (FrameColumn.Numbers) categorical.categories();
                        categories.put("dtype", numbers.typeName());
                        // as text: exact for every type (Java's shortest float text parses back to the same bits)
                        for (int i = 0; i < numbers.size(); i++) {
                            values.add(numbers.textAt(i));
                        }
                        field(schema.optional(physical(numbers.dtype())), numbers.dtype(), entry.getKey());
                    }
                    categories.set("values", values);
                }
                case FrameColumn.Nullable nullable -> {
                    description.put("encoding", nullable.isBoolean() ? "nullable-boolean" : "nullable-integer")
                            .put("dtype", nullable.values().typeName()).put("mask", nullable.mask() != null);
                    if (nullable.values() instanceof FrameColumn.Numbers numbers) {
                        field(schema.optional(physical(numbers.dtype())), numbers.dtype(), entry.getKey());
                    } else {
                        schema.optional(PrimitiveTypeName.BOOLEAN).named(entry.getKey());
                    }
                }
            }
        }
        MessageType type = schema.named("cells");
        ObjectNode metadata = JSON.createObjectNode().put("version", 1);
        metadata.set("columns", described);
        Rows rows = new Rows(type, Map.of(COLUMNS_KEY, JSON.writeValueAsString(metadata)), barcodes, columns);
        // parquet-floor's settings (snappy, Parquet 2.0 pages), with the key-value metadata it cannot write
        try (ParquetWriter<Integer> writer = new Builder(new LocalOutputFile(target), rows)
                .withCompressionCodec(CompressionCodecName.SNAPPY)
                .withWriterVersion(ParquetProperties.WriterVersion.PARQUET_2_0)
                .withWriteMode(org.apache.parquet.hadoop.ParquetFileWriter.Mode.OVERWRITE).build()) {
            for (long row = first; row < first + count; row++) {
                writer.write(Math.toIntExact(row));
            }
        }
    }

    private static PrimitiveTypeName physical(DType dtype) {
        return switch (dtype) {
            case INT64, UINT64 -> PrimitiveTypeName.INT64;
            case FLOAT32 -> PrimitiveTypeName.FLOAT;
            case FLOAT64 -> PrimitiveTypeName.DOUBLE;
            default -> PrimitiveTypeName.INT32;
        };
    }

    /** Names a field, annotated with its integer width and signedness (Parquet stores 8- and 16-bit ones as INT32). */
    private static void field(Types.PrimitiveBuilder<Types.GroupBuilder<MessageType>> builder, DType dtype, String name) {
        if (dtype != DType.FLOAT32 && dtype != DType.FLOAT64) {
            builder.as(LogicalTypeAnnotation.intType(dtype.byteSize() * 8, !dtype.name().startsWith("UINT")));
        }
        builder.named(name);
    }

    /**
     * Reads a cell table back as typed columns: those {@link #write} wrote, as the input had them. A table without
     * {@value #COLUMNS_KEY} (written by an older memfit) is read as it is stored: doubles, bools, and strings as a
     * categorical of its labels.
     *
     * @param parquet the {@code .parquet}
     * @return {@value #CELL_ID} as {@link FrameColumn.Strings}, then the obs columns, in order
     * @throws InvalidFileException naming the file when it is not such a table
     */
    public static Map<String, FrameColumn> read(Path parquet) {
        Map<String, List<Object>> values = new LinkedHashMap<>();
        JsonNode metadata;
        try {
            var footer = ParquetReader.readMetadata(parquet.toFile());
            for (Type field : footer.getFileMetaData().getSchema().getFields()) {
                values.put(field.getName(), new ArrayList<>());
            }
            String text = footer.getFileMetaData().getKeyValueMetaData().get(COLUMNS_KEY);
            metadata = text == null ? null : JSON.readTree(text);
            try (var rows = ParquetReader.streamContent(parquet.toFile(), new Hydrator<Map<String, Object>, Map<String, Object>, String[]>() {
                @Override
                public Map<String, Object> start() {
                    return new HashMap<>();
                }

                @Override
                public Map<String, Object> add(Map<String, Object> row, String[] heading, Object value) {
                    row.put(heading[0], value);
                    return row;
                }

                @Override
                public Map<String, Object> finish(Map<String, Object> row) {
                    return row;
                }
            })) {
                rows.forEach(row -> values.forEach((name, list) -> list.add(row.get(name))));
            }
        } catch (IOException | RuntimeException e) {
            throw new InvalidFileException(parquet, -1, "a Parquet table of cell metadata", "an unreadable file: " + e.getMessage(), e);
        }
        Map<String, JsonNode> described = new HashMap<>();
        if (metadata != null) {
            metadata.path("columns").forEach(column -> described.put(column.path("name").asText(), column));
        }
        Map<String, FrameColumn> columns = new LinkedHashMap<>();
        for (Map.Entry<String, List<Object>> entry : values.entrySet()) {
            JsonNode description = described.get(entry.getKey());
            try {
                columns.put(entry.getKey(), description == null ? untyped(entry.getValue()) : typed(description, entry.getValue()));
            } catch (RuntimeException e) {
                throw new InvalidFileException(parquet, -1, "column '" + entry.getKey() + "' as " + COLUMNS_KEY + " describes it ("
                        + description + ")", e.getMessage(), e);
            }
        }
        return columns;
    }

    /** A column of a table without memfit's description. */
    private static FrameColumn untyped(List<Object> values) {
        Object sample = values.stream().filter(java.util.Objects::nonNull).findFirst().orElse(null);
        if (sample instanceof Number) {
            double[] numbers = new double[values.size()];
            for (int i = 0; i < numbers.length; i++) {
                numbers[i] = values.get(i) == null ? Double.NaN : ((Number) values.get(i)).doubleValue();
            }
            return FrameColumn.Numbers.of(numbers);
        }
        if (sample instanceof Boolean) {
            boolean[] flags = new boolean[values.size()];
            for (int i = 0; i < flags.length; i++) {
                flags[i] = Boolean.TRUE.equals(values.get(i));
            }
            return new FrameColumn.Bools(flags);
        }
        String[] texts = values.stream().map(v -> v == null ? null : v.toString()).toArray(String[]::new);
        return values.contains(null) ? FrameColumn.Categorical.ofLabels(texts) : new FrameColumn.Strings(texts);
    }

    private static FrameColumn typed(JsonNode description, List<Object> values) {
        String encoding = description.path("encoding").asText();
        int n = values.size();
        switch (encoding) {
            case "array", "string-array" -> {
                String dtype = description.path("dtype").asText();
                if (dtype.equals("bool")) {
                    boolean[] flags = new boolean[n];
                    for (int i = 0; i < n; i++) {
                        flags[i] = (Boolean) values.get(i);
                    }
                    return new FrameColumn.Bools(flags);
                }
                if (dtype.equals("string")) {
                    return new FrameColumn.Strings(values.stream().map(v -> (String) v).toArray(String[]::new));
                }
                return numbers(dtype(dtype), values);
            }
            case "categorical" -> {
                JsonNode categories = description.path("categories");
                String dtype = categories.path("dtype").asText();
                List<String> texts = new ArrayList<>();
                categories.path("values").forEach(value -> texts.add(value.asText()));
                FrameColumn categoryColumn = dtype.equals("string") ? new FrameColumn.Strings(texts.toArray(String[]::new))
                        : parse(dtype(dtype), texts);
                // each cell's category back to its code, by the category's text (exact for strings and numbers)
                Map<String, Integer> code = new HashMap<>();
                for (int i = 0; i < texts.size(); i++) {
                    code.put(categoryColumn instanceof FrameColumn.Numbers numbers ? numbers.textAt(i) : texts.get(i), i);
                }
                DType codeType = dtype(description.path("codes").asText());
                long[] codes = new long[n];
                for (int i = 0; i < n; i++) {
                    Object value = values.get(i);
                    if (value == null) {
                        codes[i] = -1;
                        continue;
                    }
                    String text = categoryColumn instanceof FrameColumn.Numbers numbers
                            ? numbers(numbers.dtype(), List.of(value)).textAt(0) : (String) value;
                    Integer found = code.get(text);
                    if (found == null) {
                        throw new IllegalArgumentException("row " + i + " holds '" + text + "', not one of the " + texts.size() + " categories");
                    }
                    codes[i] = found;
                }
                return new FrameColumn.Categorical(narrow(codeType, codes), categoryColumn,
                        description.path("ordered").asBoolean());
            }
            case "nullable-integer", "nullable-boolean" -> {
                boolean[] mask = new boolean[n];
                List<Object> filled = new ArrayList<>(n);
                boolean bools = encoding.equals("nullable-boolean");
                for (int i = 0; i < n; i++) {
                    mask[i] = values.get(i) == null;
                    filled.add(mask[i] ? (bools ? (Object) Boolean.FALSE : (Object) 0L) : values.get(i));
                }
                FrameColumn stored;
                if (bools) {
                    boolean[] flags = new boolean[n];
                    for (int i = 0; i < n; i++) {
                        flags[i] = (Boolean) filled.get(i);
                    }
                    stored = new FrameColumn.Bools(flags);
                } else {
                    stored = numbers(dtype(description.path("dtype").asText()), filled);
                }
                return new FrameColumn.Nullable(stored, description.path("mask").asBoolean(true) ? mask : null);
            }
            default -> throw new IllegalArgumentException("an unknown encoding '" + encoding + "'");
        }
    }

    private static DType dtype(String name) {
        return DType.valueOf(name.toUpperCase(Locale.ROOT));
    }

    /** Parquet's values (Integer for INT32, Long for INT64, Float, Double) in a numpy type's storage. */
    private static FrameColumn.Numbers numbers(DType dtype, List<Object> values) {
        int n = values.size();
        return switch (dtype) {
            case FLOAT32 -> {
                float[] a = new float[n];
                for (int i = 0; i < n; i++) {
                    a[i] = ((Number) values.get(i)).floatValue();
                }
                yield FrameColumn.Numbers.of(a);
            }
            case FLOAT64 -> {
                double[] a = new double[n];
                for (int i = 0; i < n; i++) {
                    a[i] = ((Number) values.get(i)).doubleValue();
                }
                yield FrameColumn.Numbers.of(a);
            }
            default -> {
                long[] a = new long[n];
                for (int i = 0; i < n; i++) {
                    a[i] = ((Number) values.get(i)).longValue();
                }
                yield narrow(dtype, a);
            }
        };
    }

    /** Numbers of a type from their text, as {@link FrameColumn.Numbers#textAt} writes it. */
    private static FrameColumn.Numbers parse(DType dtype, List<String> texts) {
        List<Object> values = new ArrayList<>();
        for (String text : texts) {
            values.add(switch (dtype) {
                case FLOAT32 -> Float.parseFloat(text);
                case FLOAT64 -> Double.parseDouble(text);
                case UINT64 -> Long.parseUnsignedLong(text);
                default -> Long.parseLong(text);
            });
        }
        return numbers(dtype, values);
    }

    /** Integers (unsigned ones as their bit pattern, or widened) in the storage of their type. */
    private static FrameColumn.Numbers narrow(DType dtype, long[] values) {
        int n = values.length;
        Object storage = switch (dtype) {
            case INT8, UINT8 -> {
                byte[] a = new byte[n];
                for (int i = 0; i < n; i++) {
                    a[i] = (byte) values[i];
                }
                yield a;
            }
            case INT16, UINT16 -> {
                short[] a = new short[n];
                for (int i = 0; i < n; i++) {
                    a[i] = (short) values[i];
                }
                yield a;
            }
            case INT32, UINT32 -> {
                int[] a = new int[n];
                for (int i = 0; i < n; i++) {
                    a[i] = (int) values[i];
                }
                yield a;
            }
            default -> values;
        };
        return new FrameColumn.Numbers(dtype, storage);
    }

    /** Writes row {@code r} of the input (an Integer) as one Parquet record. */
    private static final class Rows extends WriteSupport<Integer> {
        private final MessageType schema;
        private final Map<String, String> extra;
        private final String[] barcodes;
        private final List<FrameColumn> columns;
        private RecordConsumer consumer;

        Rows(MessageType schema, Map<String, String> extra, String[] barcodes, List<FrameColumn> columns) {
            this.schema = schema;
            this.extra = extra;
            this.barcodes = barcodes;
            this.columns = columns;
        }

        @Override
        public WriteContext init(Configuration configuration) {
            return new WriteContext(schema, Map.of());
        }

        @Override
        public void prepareForWrite(RecordConsumer recordConsumer) {
            this.consumer = recordConsumer;
        }

        @Override
        public FinalizedWriteContext finalizeWrite() {
            return new FinalizedWriteContext(extra);
        }

        @Override
        public void write(Integer row) {
            consumer.startMessage();
            consumer.startField(CELL_ID, 0);
            consumer.addBinary(Binary.fromString(barcodes.length > row ? barcodes[row] : Integer.toString(row)));
            consumer.endField(CELL_ID, 0);
            for (int c = 0; c < columns.size(); c++) {
                FrameColumn column = columns.get(c);
                String name = schema.getFieldName(c + 1);
                switch (column) {
                    case FrameColumn.Numbers numbers -> {
                        start(name, c + 1);
                        number(numbers, row);
                        consumer.endField(name, c + 1);
                    }
                    case FrameColumn.Bools flags -> {
                        start(name, c + 1);
                        consumer.addBoolean(flags.values()[row]);
                        consumer.endField(name, c + 1);
                    }
                    case FrameColumn.Strings texts -> {
                        start(name, c + 1);
                        consumer.addBinary(Binary.fromString(texts.values()[row]));
                        consumer.endField(name, c + 1);
                    }
                    case FrameColumn.Categorical categorical -> {
                        int code = categorical.codeAt(row);
                        if (code >= 0) {
                            start(name, c + 1);
                            if (categorical.categories() instanceof FrameColumn.Strings names) {
                                consumer.addBinary(Binary.fromString(names.values()[code]));
                            } else {
                                number((FrameColumn.Numbers) categorical.categories(), code);
                            }
                            consumer.endField(name, c + 1);
                        }
                    }
                    case FrameColumn.Nullable nullable -> {
                        if (!nullable.isMissing(row)) {
                            start(name, c + 1);
                            if (nullable.values() instanceof FrameColumn.Bools flags) {
                                consumer.addBoolean(flags.values()[row]);
                            } else {
                                number((FrameColumn.Numbers) nullable.values(), row);
                            }
                            consumer.endField(name, c + 1);
                        }
                    }
                }
            }
            consumer.endMessage();
        }

        private void start(String name, int index) {
            consumer.startField(name, index);
        }

        /** A number as its Parquet type stores it: unsigned ones as their bit pattern in INT32/INT64. */
        private void number(FrameColumn.Numbers numbers, int row) {
            switch (numbers.values()) {
                case float[] a -> consumer.addFloat(a[row]);
                case double[] a -> consumer.addDouble(a[row]);
                case long[] a -> consumer.addLong(a[row]);
                case int[] a -> consumer.addInteger(a[row]);
                default -> consumer.addInteger((int) numbers.longAt(row));   // 8 and 16 bits, unsigned widened
            }
        }
    }

    /** parquet-hadoop's writer over {@link Rows}. */
    private static final class Builder extends ParquetWriter.Builder<Integer, Builder> {
        private final Rows rows;

        Builder(LocalOutputFile file, Rows rows) {
            super(file);
            this.rows = rows;
        }

        @Override
        protected Builder self() {
            return this;
        }

        @Override
        protected WriteSupport<Integer> getWriteSupport(Configuration configuration) {
            return rows;
        }
    }
}
