package dev.memfit.cli;

import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Turns whatever stopped a command into the one line a user reads: what failed, on which file, why, and what to do.
 *
 * <p>Bad input arrives as a {@link MemfitException} whose message already says all that. A failed environment (a
 * full disk, a folder one cannot write, a missing file) arrives as an {@link IOException}, often wrapped in an
 * {@link UncheckedIOException} that says what was being done; the line joins the two and names the operating
 * system's reason ("No space left on device"). A write through a memory mapping that hits a full disk does not
 * return an error at all: the kernel signals the process and the JVM throws {@code InternalError} from the faulting
 * access, so that one is recognised by its message. Anything else is a bug in memfit and says so.
 */
final class Failures {

    /** Where the JVM's message for a fault in a mapped access (SIGBUS), as thrown by the memory-access code. */
    private static final String MAPPED_FAULT = "unsafe memory access";

    private Failures() {
    }

    /**
     * The one line for a failure, without the {@code memfit COMMAND: } prefix.
     *
     * @param error what the command threw
     * @param output what the command writes (named when a mapped write faults), or null
     * @return one line
     */
    static String describe(Throwable error, Path output) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof InternalError && t.getMessage() != null && t.getMessage().contains(MAPPED_FAULT)) {
                return "writing " + (output == null ? "the output" : output) + " failed: the disk is probably full (a"
                        + " mapped write faulted); free space on that file system, or write somewhere else";
            }
            if (t.getCause() == t) {
                break;
            }
        }
        MemfitException memfit = find(error, MemfitException.class);
        if (memfit != null) {
            IOException io = find(memfit.getCause(), IOException.class);
            String message = memfit.getMessage();
            if (io != null) {
                String reason = reason(io, message);
                if (!message.contains(reason)) {
                    message += ": " + reason;
                }
            }
            return oneLine(message);
        }
        IOException io = find(error, IOException.class);
        if (io != null) {
            List<String> context = new ArrayList<>();
            for (Throwable t = error; t != null && t != io; t = t.getCause()) {
                // a wrapper made with only a cause repeats it as "java.io.IOException: ..."; keep only real context
                if (t.getMessage() != null && (t.getCause() == null || !t.getMessage().equals(t.getCause().toString()))) {
                    context.add(t.getMessage());
                }
            }
            context.add(reason(io, String.join(": ", context)) + hint(io));
            return oneLine(String.join(": ", context));
        }
        if (error instanceof OutOfMemoryError) {
            return "out of memory (" + error.getMessage() + "); give Java more with MEMFIT_JAVA_OPTS=-Xmx<size>"
                    + " (e.g. -Xmx8g), or ask for smaller batches or chunks";
        }
        return oneLine("internal error: " + error.getClass().getName() + ": " + error.getMessage()
                + " (run with --stacktrace and report it)");
    }

    /** The first throwable of a type in a cause chain. */
    private static <T extends Throwable> T find(Throwable error, Class<T> type) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    /**
     * The file and the operating system's reason, as {@code ls} or {@code cp} would say it; the file is left out when
     * the context before it already names it.
     */
    static String reason(IOException io, String context) {
        if (io instanceof FileSystemException fs) {
            String reason = fs.getReason();
            if (reason == null) {
                reason = switch (fs) {
                    case NoSuchFileException ignored -> "no such file or directory";
                    case AccessDeniedException ignored -> "permission denied";
                    case NotDirectoryException ignored -> "not a directory";
                    case DirectoryNotEmptyException ignored -> "a directory that is not empty";
                    case FileAlreadyExistsException ignored -> fs.getFile() != null && Files.isRegularFile(Path.of(fs.getFile()))
                            ? "a file, where a directory is needed" : "already exists";
                    default -> words(fs.getClass().getSimpleName());
                };
            }
            // as mv and cp say it: "a -> b: Is a directory"
            String files = fs.getFile() == null ? "" : fs.getOtherFile() != null ? fs.getFile() + " -> " + fs.getOtherFile() + ": "
                    : context.endsWith(fs.getFile()) ? "" : fs.getFile() + ": ";
            return files + reason;
        }
        return io.getMessage() == null || io.getMessage().isBlank() ? words(io.getClass().getSimpleName()) : io.getMessage();
    }

    /** What to do about the common reasons. */
    private static String hint(IOException io) {
        String text = reason(io, "").toLowerCase(Locale.ROOT);
        if (text.contains("no space left") || text.contains("quota")) {
            return "; free space on that file system, or write somewhere else";
        }
        if (text.contains("permission denied") || text.contains("read-only file system")) {
            return "; choose a location you can write to, or change its permissions";
        }
        return "";
    }

    /** {@code BufferUnderflowException} as "buffer underflow". */
    private static String words(String className) {
        return className.replaceAll("(Exception|Error)$", "").replaceAll("([a-z])([A-Z])", "$1 $2").toLowerCase(Locale.ROOT);
    }

    /** Collapses line breaks: a message is one line, so scripts and logs can keep it whole. */
    private static String oneLine(String message) {
        return message.strip().replaceAll("\\s*\\R\\s*", " ");
    }
}
