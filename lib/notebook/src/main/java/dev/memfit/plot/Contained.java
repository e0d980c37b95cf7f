package dev.memfit.plot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@code ./memfit} command run in a fresh JVM inside a memory and CPU limit, as in a container: the notebooks' way
 * to show data larger than memory for real, whatever the memory of the machine. The limit is a Linux control group
 * made, used and removed by {@code environment/cgroup_limit.py} ({@code ./memfit ... --memory}), and it counts the
 * page cache the command brings in, as a container's limit does. Making one needs root (or a delegated cgroup):
 * {@link #available()} says whether this machine lets memfit.
 *
 * <pre>{@code
 * var run = Contained.memfit("512m", 1, "bench", "disk", "--file", file.toString(), "--json");
 * run.group().peakMiB();   // the group's peak, page cache included
 * }</pre>
 */
public final class Contained {

    private static final ObjectMapper JSON = new ObjectMapper()
            .configure(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    private Contained() {
    }

    /**
     * What the group measured.
     *
     * @param memoryLimitMiB the limit
     * @param cpus the CPUs of time per period
     * @param peakMiB the group's peak memory, page cache included
     * @param oomKills processes the kernel's OOM killer stopped
     * @param diskReadMiB what the command read from storage (the kernel's task I/O accounting)
     */
    public record Group(double memoryLimitMiB, double cpus, double peakMiB, int oomKills, double diskReadMiB) {
    }

    /**
     * A finished run.
     *
     * @param exitStatus the command's exit status
     * @param output its standard output, line by line
     * @param group the group's figures
     */
    public record Run(int exitStatus, List<String> output, Group group) {
        /**
         * The output's lines that are JSON objects, read as records of a type (such as a benchmark's rows).
         *
         * @param type the record type
         * @param <T> the type
         * @return one value per JSON line
         */
        public <T> List<T> json(Class<T> type) {
            List<T> values = new ArrayList<>();
            for (String line : output) {
                if (line.startsWith("{")) {
                    try {
                        values.add(JSON.readValue(line, type));
                    } catch (IOException e) {
                        throw new MemfitException("cannot read " + type.getSimpleName() + " from: " + line, e);
                    }
                }
            }
            return values;
        }
    }

    /**
     * Whether this machine lets memfit make a control group (root, cgroup v1 or v2).
     *
     * @return null when it does, else the reason in one line
     */
    public static String available() {
        try {
            Process check = new ProcessBuilder("/usr/bin/python3", script().toString(), "--check")
                    .redirectErrorStream(true).start();
            String said = new String(check.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            return check.waitFor() == 0 ? null : said.replaceFirst("^memfit: ", "");
        } catch (IOException e) {
            return "cannot run " + script() + ": " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    /**
     * Runs {@code ./memfit ARGUMENTS --memory MEMORY --cpus CPUS} and waits for it.
     *
     * @param memory the limit, such as {@code 512m} or {@code 2g}
     * @param cpus CPUs of time per period
     * @param arguments the command and its arguments
     * @return its output and the group's figures
     * @throws MemfitException when the group cannot be made, the command fails, or the OOM killer stopped it
     */
    public static Run memfit(String memory, double cpus, String... arguments) {
        Path report = null;
        Path errors = null;
        try {
            report = Files.createTempFile("memfit-group-", ".json");
            List<String> command = new ArrayList<>(List.of(home().resolve("memfit").toString()));
            command.addAll(List.of(arguments));
            command.addAll(List.of("--memory", memory, "--cpus", Double.toString(cpus)));
            errors = Files.createTempFile("memfit-group-", ".err");
            // the command's messages go to a file, so that neither stream can fill its pipe and stall the other
            ProcessBuilder builder = new ProcessBuilder(command).redirectError(errors.toFile());
            builder.environment().put("MEMFIT_CGROUP_REPORT", report.toString());
            Process process = builder.start();
            List<String> output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList();
            int status = process.waitFor();
            String said = Files.readString(errors).strip();
            said = said.substring(Math.max(0, said.length() - 2_000));   // the end says what went wrong
            if (Files.size(report) == 0) {
                throw new MemfitException("./memfit " + String.join(" ", arguments) + " --memory " + memory
                        + " did not run inside a control group: " + said);
            }
            JsonNode figures = JSON.readTree(report.toFile());
            Group group = new Group(figures.path("memory_limit_mib").asDouble(), figures.path("cpus").asDouble(),
                    figures.path("peak_mib").asDouble(Double.NaN), figures.path("oom_kills").asInt(),
                    figures.path("disk_read_mib").asDouble(Double.NaN));
            if (group.oomKills() > 0 || status != 0) {
                throw new MemfitException("./memfit " + String.join(" ", arguments) + " inside " + memory + " ended with "
                        + "status " + status + (group.oomKills() > 0 ? " (OOM-killed)" : "") + ": " + said);
            }
            return new Run(status, output, group);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MemfitException("interrupted while ./memfit ran inside its limit", e);
        } finally {
            for (Path temporary : new Path[]{report, errors}) {
                try {
                    if (temporary != null) {
                        Files.deleteIfExists(temporary);
                    }
                } catch (IOException e) {
                    // a temporary file left behind: harmless
                }
            }
        }
    }

    private static Path home() {
        String home = System.getProperty("memfit.home", System.getenv("MEMFIT_HOME"));
        if (home == null || home.isBlank()) {
            throw new MemfitException("cannot find ./memfit: run the notebook on memfit's kernel (MEMFIT_HOME), or set "
                    + "-Dmemfit.home");
        }
        return Path.of(home);
    }

    private static Path script() {
        return home().resolve("environment").resolve("cgroup_limit.py");
    }
}
