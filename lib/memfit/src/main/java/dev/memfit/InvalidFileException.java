package dev.memfit;


import java.nio.file.Path;

/**
 * A file that does not hold what its format promises: truncated, inconsistent, or of another format.
 *
 * <p>The message always names the file, the byte offset where the problem was found (or -1 when it concerns the whole
 * file), what was expected and what was found.
 */
public class InvalidFileException extends MemfitException {

    /** The offending file (not serialised: paths are not serialisable). */
    private final transient Path file;
    /** The byte offset of the problem, or -1 when it concerns the whole file. */
    private final long offset;

    /**
     * Creates the exception.
     *
     * @param file the offending file
     * @param offset the byte offset of the problem, or -1 when it concerns the whole file
     * @param expected what the format requires there
     * @param found what the file holds instead
     */
    public InvalidFileException(Path file, long offset, String expected, String found) {
        super(shown(file) + (offset >= 0 ? " at byte " + offset : "") + ": expected " + expected + ", found " + found);
        this.file = file;
        this.offset = offset;
    }

    /**
     * Creates the exception with a cause, such as the I/O error that stopped a read.
     *
     * @param file the offending file
     * @param offset the byte offset of the problem, or -1
     * @param expected what the format requires there
     * @param found what the file holds instead
     * @param cause the underlying failure
     */
    public InvalidFileException(Path file, long offset, String expected, String found, Throwable cause) {
        super(shown(file) + (offset >= 0 ? " at byte " + offset : "") + ": expected " + expected + ", found " + found, cause);
        this.file = file;
        this.offset = offset;
    }

    /**
     * A file as users wrote it: an object in a bucket travels as the path {@code s3:/bucket/key} (a path cannot hold
     * {@code //}) and is shown as {@code s3://bucket/key}.
     */
    private static String shown(Path file) {
        String text = String.valueOf(file);
        java.util.regex.Matcher object = java.util.regex.Pattern.compile("^(s3|gs):/([^/].*)$").matcher(text);
        return object.matches() ? object.group(1) + "://" + object.group(2) : text;
    }

    /**
     * The file the problem was found in.
     *
     * @return the path as given by the caller
     */
    public Path file() {
        return file;
    }

    /**
     * The byte offset of the problem.
     *
     * @return the offset, or -1 when the problem concerns the whole file
     */
    public long offset() {
        return offset;
    }
}
