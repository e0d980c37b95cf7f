package dev.memfit.io.storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Names of temporary files that say whose they are, and the removal of those whose writer is gone.
 *
 * <p>A file on its way to {@code NAME} is written as {@code .NAME.<pid>-<run>-<n>[.<role>].partial}: the writer's
 * process id, a random 8-hex-digit tag of this JVM (so a later process that gets the same pid, as the first process
 * of every container does, can tell a dead writer's file from its own) and a counter. No two writers of any process
 * ever share a name, and a later run can tell a dead writer's leftovers from a live writer's file:
 * {@link #removeStale} deletes a temporary file when its pid is no longer running, or is this process's pid with
 * another run tag. A file of a live process (another pid still running) is kept.
 *
 * <p>Names written by earlier memfit versions carry no owner ({@code .NAME.partial}, {@code .NAME.<digits>.partial})
 * or only a pid ({@code NAME.tmp-<pid>}, {@code NAME.indices-<pid>}); the first two are removed by a writer that holds
 * the output's {@link OutputLock} (no current writer makes them), the last two when their pid is gone.
 */
public final class TempFiles {

    /** This JVM's run tag: the pid alone does not tell runs apart where pids are reused. */
    static final String RUN = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    private static final long PID = ProcessHandle.current().pid();
    private static final AtomicLong COUNTER = new AtomicLong();
    /** {@code .NAME.<pid>-<run>-<n>[.<role>].partial}: group 1 the target's name, 2 the pid, 3 the run tag. */
    private static final Pattern CURRENT = Pattern.compile("\\.(.+)\\.(\\d+)-([0-9a-f]{8})-\\d+(?:\\.[a-z0-9]+)?\\.partial");
    /** {@code .NAME.partial} and {@code .NAME.<digits>.partial} of earlier versions: no owner recorded. */
    private static final Pattern LEGACY = Pattern.compile("\\.(.+?)(?:\\.\\d+)?\\.partial");
    /** {@code NAME.tmp-<pid>} and {@code NAME.indices-<pid>} of earlier versions of the {@code .h5ad} writer. */
    private static final Pattern LEGACY_PID = Pattern.compile("(.+)\\.(?:tmp|indices)-(\\d+)");

    private TempFiles() {
    }

    /**
     * A new temporary name beside {@code target}, unique to this writer: {@code .NAME.<pid>-<run>-<n>.partial}.
     * Nothing is created.
     *
     * @param target the final path
     * @return the temporary path, in the target's folder (so the final rename stays on one file system)
     */
    public static Path beside(Path target) {
        return beside(target, null);
    }

    /**
     * A new temporary name beside {@code target} for one of several working files of a writer:
     * {@code .NAME.<pid>-<run>-<n>.<role>.partial}.
     *
     * @param target the final path
     * @param role a short lowercase word such as {@code indices}, or null
     * @return the temporary path
     */
    public static Path beside(Path target, String role) {
        if (role != null && !role.matches("[a-z0-9]+")) {
            throw new IllegalArgumentException("a temporary file's role is a lowercase word, got \"" + role + "\"");
        }
        Path absolute = target.toAbsolutePath();
        return absolute.resolveSibling("." + absolute.getFileName() + "." + PID + "-" + RUN + "-"
                + COUNTER.incrementAndGet() + (role == null ? "" : "." + role) + ".partial");
    }

    /**
     * Whether a file name is a temporary name of any memfit writer, current or earlier.
     *
     * @param fileName a file's name
     * @return true for names {@link #beside} makes and those earlier versions made
     */
    public static boolean isTemporary(String fileName) {
        return CURRENT.matcher(fileName).matches() || LEGACY.matcher(fileName).matches()
                || LEGACY_PID.matcher(fileName).matches();
    }

    /**
     * Whether the writer of a temporary file is gone: its pid is not running, or it is this process's pid with
     * another run tag; a name of an earlier version without an owner counts as gone.
     *
     * @param fileName a temporary file's name
     * @return true when no running writer can own it; false for a live writer's file and for other names
     */
    public static boolean isStale(String fileName) {
        Matcher current = CURRENT.matcher(fileName);
        if (current.matches()) {
            long pid = Long.parseLong(current.group(2));
            return pid == PID ? !current.group(3).equals(RUN) : !alive(pid);
        }
        Matcher withPid = LEGACY_PID.matcher(fileName);
        if (withPid.matches()) {
            long pid = Long.parseLong(withPid.group(2));
            return pid != PID && !alive(pid);
        }
        return LEGACY.matcher(fileName).matches();
    }

    /** The name of the output a temporary file was on its way to, or null when the name is not a temporary one. */
    static String targetOf(String fileName) {
        Matcher current = CURRENT.matcher(fileName);
        if (current.matches()) {
            return current.group(1);
        }
        Matcher withPid = LEGACY_PID.matcher(fileName);
        if (withPid.matches()) {
            return withPid.group(1);
        }
        Matcher legacy = LEGACY.matcher(fileName);
        return legacy.matches() ? legacy.group(1) : null;
    }

    /**
     * Deletes the stale temporary files ({@link #isStale}) in a folder: those on their way to {@code targetName},
     * or every one when it is null.
     *
     * @param folder the folder to look in (nothing happens when it does not exist)
     * @param targetName the output's file name, or null for all
     * @return the files deleted
     */
    public static List<Path> removeStale(Path folder, String targetName) {
        List<Path> removed = new ArrayList<>();
        if (!Files.isDirectory(folder)) {
            return removed;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(folder)) {
            for (Path file : files) {
                String name = file.getFileName().toString();
                if (isTemporary(name) && (targetName == null || targetName.equals(targetOf(name))) && isStale(name)) {
                    try {
                        if (Files.deleteIfExists(file)) {
                            removed.add(file);
                        }
                    } catch (NoSuchFileException ignored) {
                        // removed by another cleaner meanwhile
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot clean up temporary files in " + folder, e);
        }
        return removed;
    }

    private static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }
}
