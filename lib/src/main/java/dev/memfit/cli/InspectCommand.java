package dev.memfit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.memfit.MemfitException;
import dev.memfit.io.Npy;
import dev.memfit.io.NpyArray;
import dev.memfit.data.LazySource;
import dev.memfit.data.Particles;
import dev.memfit.io.H5ad;
import dev.memfit.io.MrcHeader;
import dev.memfit.io.NpyHeader;
import dev.memfit.io.ParticleStack;
import dev.memfit.io.Storage;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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

    @Parameters(paramLabel = "FILE", description = "a .npy file, an .mrcs/.mrc stack, a .txt list of stacks, a RELION .star or an .h5ad")
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
        if (name.endsWith(".mrcs") || name.endsWith(".mrc") || name.endsWith(".txt") || name.endsWith(".star")) {
            return inspectParticles(file);
        }
        if (name.endsWith(".h5ad")) {
            try (H5ad h5ad = H5ad.open(file)) {
                Map<String, Object> facts = new LinkedHashMap<>();
                facts.put("file", file.toString());
                facts.put("format", "AnnData .h5ad, X " + (h5ad.sparse() ? "CSR" : "dense"));
                facts.put("n_obs", h5ad.observations());
                facts.put("n_vars", h5ad.variables());
                facts.put("nnz", h5ad.storedValues());
                facts.put("obs_columns", String.join(", ", h5ad.columns("obs").keySet()));
                facts.put("size_on_disk", Files.size(file));
                facts.put("sum", h5ad.sum());
                return facts;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        if (!name.endsWith(".npy") && !Npy.looksLikeNpy(file)) {
            throw new MemfitException(file + ": expected a file inspect knows (.npy, .mrcs, .mrc, .txt list of stacks, "
                    + ".star, .h5ad), found a file without the .npy magic or one of those extensions");
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

    /** Stacks and listings: the header facts, then the float64 sum of every particle's pixels, streamed. */
    private static Map<String, Object> inspectParticles(Path file) {
        ParticleStack stack = ParticleStack.open(file);
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("file", file.toString());
        boolean single = stack.files().size() == 1 && stack.files().getFirst().equals(file);
        MrcHeader header = stack.header(0);
        facts.put("format", single ? "MRC2014 mode " + MrcHeader.mode(header.dtype())
                : (file.toString().endsWith(".star") ? "RELION star" : "list of stacks") + ", " + stack.files().size() + " stack(s)");
        facts.put("images", stack.size());
        facts.put("image_shape", new long[]{stack.height(), stack.width()});
        facts.put("dtype", header.dtype().name().toLowerCase(Locale.ROOT));
        facts.put("byte_order", header.byteOrder() == ByteOrder.LITTLE_ENDIAN ? "little-endian" : "big-endian");
        facts.put("voxel_size", header.voxelSize());
        if (single) {
            facts.put("extended_header", header.extendedHeaderBytes());
        }
        facts.put("image_bytes", stack.fileBytes());
        try {
            long onDisk = 0;
            for (Path stackFile : stack.files()) {
                onDisk += Files.size(stackFile);
            }
            facts.put("size_on_disk", onDisk);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        double sum = 0;
        try (LazySource source = Particles.lazy(stack, Storage.local(), 1); Arena arena = Arena.ofConfined()) {
            int chunk = (int) Math.max(1, (32L << 20) / source.sampleBytes());
            MemorySegment buffer = arena.allocate(chunk * source.sampleBytes());
            for (long first = 0; first < stack.size(); first += chunk) {
                int n = (int) Math.min(chunk, stack.size() - first);
                long[] indices = new long[n];
                for (int i = 0; i < n; i++) {
                    indices[i] = first + i;
                }
                source.readBatch(indices, buffer);
                long values = n * source.sampleShape().size();
                double partial = 0;
                for (long v = 0; v < values; v++) {
                    partial += buffer.getAtIndex(ValueLayout.JAVA_FLOAT, v);
                }
                sum += partial;
            }
        }
        facts.put("sum", sum);
        return facts;
    }
}
