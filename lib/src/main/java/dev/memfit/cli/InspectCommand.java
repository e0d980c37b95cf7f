package dev.memfit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.memfit.MemfitException;
import dev.memfit.io.Npy;
import dev.memfit.io.NpyArray;
import dev.memfit.io.NpyHeader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code memfit inspect FILE}: what a data file holds, and the sum of its values for comparison with numpy. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Show format, shape, dtype, byte order, memory order, size and the float64 sum of all values.")
final class InspectCommand implements Callable<Integer> {

    @Parameters(paramLabel = "FILE", description = "a .npy file")
    private Path file;

    @Option(names = "--json", description = "print one JSON object instead of a table")
    private boolean json;

    @Override
    public Integer call() throws IOException {
        if (!Files.exists(file)) {
            throw new MemfitException(file + ": no such file");
        }
        Map<String, Object> facts = inspect(file);
        if (json) {
            System.out.println(new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS).writeValueAsString(facts));
        } else {
            facts.forEach((key, value) -> System.out.printf(Locale.ROOT, "%-14s %s%n", key.replace('_', ' '),
                    value instanceof long[] shape ? Arrays.toString(shape) : value));
        }
        return 0;
    }

    /**
     * The facts about a file, in display order.
     *
     * @param file the file
     * @return name to value
     */
    static Map<String, Object> inspect(Path file) {
        String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
        if (!name.endsWith(".npy") && !Npy.looksLikeNpy(file)) {
            throw new MemfitException(file + ": expected a .npy file (the formats inspect knows), found a file "
                    + "without the .npy magic or extension");
        }
        Map<String, Object> facts = new LinkedHashMap<>();
        try (NpyArray array = Npy.map(file)) {
            NpyHeader header = array.header();
            facts.put("file", file.toString());
            facts.put("format", "npy " + header.majorVersion() + ".0");
            facts.put("shape", header.shape());
            facts.put("dtype", header.dtype().name().toLowerCase(Locale.ROOT) + " (" + header.dtype().descr(header.byteOrder()) + ")");
            facts.put("byte_order", header.dtype().byteSize() == 1 ? "not applicable"
                    : header.byteOrder() == ByteOrder.LITTLE_ENDIAN ? "little-endian" : "big-endian");
            facts.put("memory_order", header.fortranOrder() ? "Fortran (column-major)" : "C (row-major)");
            facts.put("elements", header.elementCount());
            facts.put("data_offset", header.dataOffset());
            facts.put("size_on_disk", Files.size(file));
            facts.put("sum", array.sum());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return facts;
    }
}
