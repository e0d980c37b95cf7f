package dev.memfit.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Runs the reference implementations a benchmark compares against (a C loop, numpy, torch) as child processes,
 * in the same run, so figures are ratios measured side by side.
 */
final class Baselines {

    private static final ObjectMapper JSON = new ObjectMapper();

    private Baselines() {
    }

    /** The folder of baseline sources: {@code environment/bench} under the repository root. */
    static Path sources() {
        Path root = Path.of(System.getProperty("memfit.home", ".")).toAbsolutePath();
        return root.resolve("environment/bench");
    }

    /** A JSON array of numbers a baseline printed, as doubles. */
    static double[] doubles(JsonNode node) {
        double[] values = new double[node.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = node.get(i).asDouble();
        }
        return values;
    }

    /** The mean of the epochs after the first (the first warms up), or the only one. */
    static double laterMean(double[] epochSeconds) {
        return epochSeconds.length > 1 ? java.util.Arrays.stream(epochSeconds, 1, epochSeconds.length).average().orElseThrow()
                : epochSeconds[0];
    }

    static boolean pythonHas(String module) {
        return run(List.of("/usr/bin/python3", "-c", "import " + module), 60).isPresent();
    }

    /** Compiles gather.c with gcc -O2 into the build folder, or returns empty when gcc is missing. */
    static Optional<Path> compileGather(Path buildDir) {
        return compile(buildDir, "gather");
    }

    /** Compiles {@code environment/bench/NAME.c} with gcc -O2 into the build folder, or returns empty when gcc is missing. */
    static Optional<Path> compile(Path buildDir, String name) {
        Path source = sources().resolve(name + ".c");
        Path binary = buildDir.resolve(name);
        if (!Files.exists(source)) {
            return Optional.empty();
        }
        Optional<String> out = run(List.of("gcc", "-O2", "-march=native", "-pthread", "-o", binary.toString(),
                source.toString()), 120);
        return out.map(ignored -> binary);
    }

    static Optional<JsonNode> json(List<String> command, long timeoutSeconds) {
        return run(command, timeoutSeconds).map(text -> {
            try {
                String[] lines = text.strip().split("\n");
                return JSON.readTree(lines[lines.length - 1]);
            } catch (IOException e) {
                return null;
            }
        });
    }

    static Optional<String> run(List<String> command, long timeoutSeconds) {
        try {
            Process process = new ProcessBuilder(new ArrayList<>(command)).redirectErrorStream(true).start();
            byte[] out = process.getInputStream().readAllBytes();
            if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return Optional.empty();
            }
            return process.exitValue() == 0 ? Optional.of(new String(out, StandardCharsets.UTF_8)) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }
}
