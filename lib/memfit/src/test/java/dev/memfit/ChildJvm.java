package dev.memfit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A second JVM running a main class of the test class path, for tests that kill a process and check what it left
 * behind (checkpoints, loader states, temporary files). Standard output and error go to a log file, whose tail every
 * failure message quotes.
 *
 * <pre>{@code
 * try (ChildJvm child = ChildJvm.start(log, Trainer.class, "--epochs", "3")) {
 *     child.waitUntil(Duration.ofSeconds(60), "the second checkpoint", ChildJvm.lines(progress, 2));
 *     child.kill();                  // SIGKILL: no shutdown hook, no finally block runs
 * }
 * }</pre>
 *
 * <p>The child runs with this JVM's {@code java.home}, the test class path (surefire sets {@code java.class.path} to
 * it in the forked JVM; its manifest-only booter jar is only the command line), this JVM's environment plus
 * {@code DJL_OFFLINE} and {@code OPT_OUT_TRACKING}, and the {@code memfit.*} and {@code ai.djl.offline} system
 * properties the surefire configuration sets.
 */
public final class ChildJvm implements AutoCloseable {

    /** The exit status of a process killed by SIGKILL (128 + 9), as {@link Process#exitValue()} reports it. */
    public static final int SIGKILL_EXIT = 137;

    private final Process process;
    private final Path log;
    private final String name;

    private ChildJvm(Process process, Path log, String name) {
        this.process = process;
        this.log = log;
        this.name = name;
    }

    /**
     * Starts {@code main} in a new JVM with a 256 MiB heap.
     *
     * @param log where the child's standard output and error go (replaced)
     * @param main a class with a {@code main(String[])} on the test class path
     * @param args its arguments
     * @return the running child, to be closed (which kills it if it still runs)
     */
    public static ChildJvm start(Path log, Class<?> main, String... args) {
        return start(log, Map.of(), List.of("-Xmx256m"), main, args);
    }

    /**
     * Starts {@code main} in a new JVM.
     *
     * @param log where the child's standard output and error go (replaced)
     * @param env environment variables added to this JVM's
     * @param jvmOptions options before the main class, e.g. {@code -Xmx512m} or {@code -Dkey=value}
     * @param main a class with a {@code main(String[])} on the test class path
     * @param args its arguments
     * @return the running child, to be closed (which kills it if it still runs)
     */
    public static ChildJvm start(Path log, Map<String, String> env, List<String> jvmOptions, Class<?> main, String... args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-cp");
        command.add(testClassPath());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-Djava.awt.headless=true");
        // a short-lived child: quick start matters more than peak speed
        command.add("-XX:TieredStopAtLevel=1");
        command.add("-XX:+UseSerialGC");
        for (String property : System.getProperties().stringPropertyNames()) {
            if (property.startsWith("memfit.") || property.equals("ai.djl.offline")) {
                command.add("-D" + property + "=" + System.getProperty(property));
            }
        }
        command.addAll(jvmOptions);
        command.add(main.getName());
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.to(log.toFile()));
        builder.environment().put("DJL_OFFLINE", "true");
        builder.environment().put("OPT_OUT_TRACKING", "true");
        builder.environment().putAll(env);
        try {
            return new ChildJvm(builder.start(), log, main.getSimpleName() + " " + String.join(" ", args));
        } catch (IOException e) {
            throw new AssertionError("cannot start a child JVM: " + command, e);
        }
    }

    /**
     * The class path of the tests: {@code java.class.path} unless it is only surefire's manifest-only booter jar, then
     * the class path surefire passes as {@code surefire.test.class.path}.
     */
    static String testClassPath() {
        String path = System.getProperty("java.class.path", "");
        String surefire = System.getProperty("surefire.test.class.path");
        boolean booterOnly = !path.contains(java.io.File.pathSeparator) && path.contains("surefirebooter");
        if (booterOnly && surefire != null && !surefire.isEmpty()) {
            return surefire;
        }
        return path;
    }

    /**
     * The process, for its pid or to wait on it.
     *
     * @return the process
     */
    public Process process() {
        return process;
    }

    /**
     * Waits until a condition holds, polling every 5 ms; fails (quoting the log) when the child exits first or the
     * time runs out.
     *
     * @param timeout how long to wait at most
     * @param what the condition in words, for the failure message
     * @param condition what to wait for
     */
    public void waitUntil(Duration timeout, String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (!process.isAlive()) {
                if (condition.getAsBoolean()) {
                    return;
                }
                throw new AssertionError("child " + name + " exited with " + process.exitValue() + " before " + what
                        + "\n" + tail(40));
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("child " + name + " did not reach " + what + " within " + timeout + "\n" + tail(40));
            }
            sleep(5);
        }
    }

    /**
     * Kills the child with SIGKILL ({@link Process#destroyForcibly()} on Linux) and waits for it to die: no shutdown
     * hook or finally block of the child runs.
     *
     * @throws AssertionError when the child had already exited, or did not die of SIGKILL (exit status 137)
     */
    public void kill() {
        if (!process.isAlive()) {
            throw new AssertionError("child " + name + " exited with " + process.exitValue() + " before it could be killed\n"
                    + tail(40));
        }
        process.destroyForcibly();
        int status = waitForExit(Duration.ofSeconds(30));
        if (status != SIGKILL_EXIT) {
            throw new AssertionError("child " + name + " killed, but its exit status is " + status + ", not "
                    + SIGKILL_EXIT + " (SIGKILL)\n" + tail(40));
        }
    }

    /**
     * Waits for the child to finish and fails, quoting its log, unless it exits with status 0.
     *
     * @param timeout how long to wait at most (then it is killed)
     */
    public void awaitSuccess(Duration timeout) {
        int status = waitForExit(timeout);
        if (status != 0) {
            throw new AssertionError("child " + name + " failed with exit status " + status + "\n" + tail(40));
        }
    }

    private int waitForExit(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                process.waitFor();
                throw new AssertionError("child " + name + " still ran after " + timeout + "; killed\n" + tail(40));
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            throw new AssertionError("interrupted while waiting for child " + name, e);
        }
    }

    /**
     * The last lines of the child's log, headed by the log's path.
     *
     * @param lines how many lines at most
     * @return the tail
     */
    public String tail(int lines) {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            return "--- last " + Math.min(lines, all.size()) + " of " + all.size() + " lines of " + log + " ---\n"
                    + String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | java.io.UncheckedIOException e) {
            return "--- " + log + " could not be read: " + e + " ---";
        }
    }

    /**
     * Whether a text file (the child's log or a file it writes) contains a line that contains {@code text}.
     *
     * @param file the file, which may not exist yet
     * @param text what a line must contain
     * @return the condition
     */
    public static BooleanSupplier lineContaining(Path file, String text) {
        return () -> readLines(file).stream().anyMatch(line -> line.contains(text));
    }

    /**
     * Whether a text file has at least {@code count} complete (newline-ended) lines.
     *
     * @param file the file, which may not exist yet
     * @param count the lines
     * @return the condition
     */
    public static BooleanSupplier lines(Path file, long count) {
        return () -> {
            try {
                if (!Files.exists(file)) {
                    return false;
                }
                byte[] bytes = Files.readAllBytes(file);
                long newlines = 0;
                for (byte b : bytes) {
                    if (b == '\n') {
                        newlines++;
                    }
                }
                return newlines >= count;
            } catch (IOException e) {
                return false;
            }
        };
    }

    private static List<String> readLines(Path file) {
        try {
            return Files.exists(file) ? Files.readAllLines(file, StandardCharsets.UTF_8) : List.of();
        } catch (IOException | java.io.UncheckedIOException e) {
            return List.of();     // being written: the next poll reads it again
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** Kills the child if it still runs (a failed test must not leave it behind). */
    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
