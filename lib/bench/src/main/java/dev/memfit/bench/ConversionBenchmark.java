package dev.memfit.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.ProgressListener;
import dev.memfit.io.AnnDataFiles;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.storage.Folders;
import dev.memfit.memory.MemoryProbe;
import dev.memfit.memory.MemoryTimeline;
import dev.memfit.shard.ShardWriter;
import dev.memfit.synthetic.SyntheticAtlas;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Peak memory of {@code .h5ad} to shard conversion as the file grows: the "conversion of CSC and gzip files:
 * peak memory flat as the file doubles". The input is rewritten by anndata in the layout and compression asked
 * for, then stacked on itself (1x, 2x, 4x ... the cells), and each file is converted in a fresh JVM with a 512 MB heap,
 * so that its peak resident memory is the conversion's own (a CSC X includes its out-of-core transpose).
 */
public final class ConversionBenchmark {

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * What to measure.
     *
     * @param file the source atlas ({@code .h5ad}; a synthetic CSR atlas is written there when missing)
     * @param cells cells when creating it
     * @param genes genes when creating it
     * @param layout "csc", "csr" or "as-is": the layout of X in the measured files
     * @param gzip whether the measured files are gzip-compressed
     * @param sizes multiples of the source's cells to measure, such as 1 and 2
     * @param shardSize cells per shard
     * @param transposeBudget the memory budget of a CSC transpose in bytes, or -1 for the default
     */
    public record Settings(Path file, long cells, int genes, String layout, boolean gzip, List<Integer> sizes,
                           long shardSize, long transposeBudget) {
    }

    /**
     * One conversion.
     *
     * @param file the converted file
     * @param layout how its X is stored
     * @param cells its cells
     * @param storedValues its stored values
     * @param megabytes its size on disk
     * @param seconds the whole conversion
     * @param transposeSeconds the CSC transpose within it (0 for CSR)
     * @param peakAnonymousMegabytes peak anonymous resident memory (heap, native buffers), sampled every 20 ms
     * @param peakMegabytes peak resident memory (VmHWM), including mapped file pages the kernel can drop
     * @param peakHeapMegabytes peak used heap
     */
    public record Row(String file, String layout, long cells, long storedValues, double megabytes, double seconds,
                      double transposeSeconds, double peakAnonymousMegabytes, double peakMegabytes, double peakHeapMegabytes) {
    }

    private ConversionBenchmark() {
    }

    /**
     * Prepares the files and converts each in a child JVM.
     *
     * @param settings the settings
     * @return one row per size, smallest first
     */
    public static List<Row> run(Settings settings) {
        Path source = settings.file();
        if (!Files.exists(source)) {
            SyntheticAtlas.builder().setCells(settings.cells()).setGenes(settings.genes()).optProgress(ProgressListener.silent())
                    .write(source);
        }
        Path work = source.toAbsolutePath().getParent().resolve(source.getFileName() + ".conversion");
        List<Row> rows = new ArrayList<>();
        for (int times : settings.sizes()) {
            String name = settings.layout() + (settings.gzip() ? "-gzip" : "") + "-x" + times + ".h5ad";
            Path input = work.resolve(name);
            if (!Files.exists(input)) {
                rewrite(source, input, settings.layout(), settings.gzip(), times);
            }
            Path shards = work.resolve("shards");
            deleteTree(shards);
            JsonNode json = convertInChildJvm(input, shards, settings.shardSize(), settings.transposeBudget());
            deleteTree(shards);
            try (AnnData h5ad = AnnDataFiles.open(input)) {
                rows.add(new Row(input.getFileName().toString(), h5ad.layout().toString(), h5ad.observations(), h5ad.storedValues(),
                        size(input) / 1e6, json.get("seconds").asDouble(), json.get("transpose_seconds").asDouble(),
                        json.get("peak_rss_anon_mb").asDouble(), json.get("peak_rss_mb").asDouble(),
                        json.get("peak_heap_mb").asDouble()));
            }
        }
        return rows;
    }

    /** anndata writes {@code times} copies of the source's cells, stacked, in the layout and compression asked for. */
    private static void rewrite(Path source, Path target, String layout, boolean gzip, int times) {
        try {
            Files.createDirectories(target.getParent());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Path partial = target.resolveSibling("." + target.getFileName() + ".partial.h5ad");
        String script = """
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                src, dst, layout, gzip, times = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == 'true', int(sys.argv[5])
                a = ad.read_h5ad(src)
                x = a.X if sp.issparse(a.X) else sp.csr_matrix(a.X)
                fmt = x.format if layout == 'as-is' else layout
                x = sp.vstack([x] * times, format='csr').asformat(fmt)
                obs = pd.concat([a.obs] * times)
                obs.index = ['%s-%d' % (n, k) for k in range(times) for n in a.obs_names]
                ad.AnnData(x, obs=obs, var=a.var, dtype=x.dtype).write_h5ad(dst, compression='gzip' if gzip else None)
                print('ok')
                """;
        List<String> command = List.of("/usr/bin/python3", "-c", script, source.toString(), partial.toString(), layout,
                Boolean.toString(gzip), Integer.toString(times));
        String out = run(command);
        if (out == null || !out.strip().endsWith("ok")) {
            throw new IllegalStateException("anndata could not write " + target + ": " + out);
        }
        try {
            Files.move(partial, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static JsonNode convertInChildJvm(Path input, Path output, long shardSize, long budget) {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(java, "-Xmx512m", "--enable-native-access=ALL-UNNAMED",
                "-Dmemfit.progress=false"));
        if (budget > 0) {
            command.add("-Dmemfit.transpose.budget=" + budget);
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), ConversionBenchmark.class.getName(),
                input.toString(), output.toString(), Long.toString(shardSize)));
        String out = run(command);
        try {
            String[] lines = out == null ? new String[]{""} : out.strip().split("\n");
            return JSON.readTree(lines[lines.length - 1]);
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("conversion of " + input + " failed in the child JVM (" + String.join(" ", command)
                    + "): " + out, e);
        }
    }

    private static String run(List<String> command) {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(3600, TimeUnit.SECONDS) || process.exitValue() != 0) {
                process.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command.subList(0, 1)) + " failed: " + out);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void deleteTree(Path folder) {
        try {
            Folders.deleteTree(folder);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot clear " + folder, e);
        }
    }

    /**
     * The child process: {@code INPUT OUTPUT SHARD_SIZE}; converts and prints one JSON line with the seconds, the
     * transpose's seconds, peak resident memory (VmHWM), peak anonymous resident memory and peak heap.
     *
     * @param args the arguments
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            throw new IllegalArgumentException("usage: INPUT OUTPUT SHARD_SIZE");
        }
        long[] transpose = new long[2];
        ProgressListener timing = (task, total, unit) -> {
            boolean transposing = task.startsWith("Transposing");
            if (transposing) {
                transpose[0] = System.nanoTime();
            }
            return new ProgressListener.Task() {
                @Override
                public void step(long steps) {
                }

                @Override
                public void close() {
                    if (transposing) {
                        transpose[1] = System.nanoTime();
                    }
                }
            };
        };
        long start = System.nanoTime();
        MemoryTimeline timeline;
        try (MemoryProbe probe = MemoryProbe.start("conversion", java.time.Duration.ofMillis(20))) {
            ShardWriter.builder().setInput(Path.of(args[0])).optShardSize(Long.parseLong(args[2])).optProgress(timing)
                    .write(Path.of(args[1]));
            timeline = probe.stop();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        long peakHeap = PeakMemory.heapBytes();
        long peakRss = PeakMemory.residentBytes();
        System.out.println(JSON.writeValueAsString(Map.of("seconds", seconds, "transpose_seconds", (transpose[1] - transpose[0]) / 1e9,
                "peak_rss_mb", peakRss / 1e6, "peak_rss_anon_mb", timeline.peakRssAnon() / 1e6, "peak_heap_mb", peakHeap / 1e6)));
    }
}
