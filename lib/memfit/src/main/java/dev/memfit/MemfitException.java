package dev.memfit;

/**
 * The root of every exception memfit throws on purpose.
 *
 * <p>Unchecked, so fluent pipelines stay readable; subclasses name the kind of failure and their messages name the
 * file, the position and what was expected against what was found.
 */
public class MemfitException extends RuntimeException {

    /**
     * Creates an exception with a message.
     *
     * @param message what went wrong, for a person to read
     */
    public MemfitException(String message) {
        super(message);
    }

    /**
     * Creates an exception with a message and a cause.
     *
     * @param message what went wrong, for a person to read
     * @param cause the underlying failure
     */
    public MemfitException(String message, Throwable cause) {
        super(message, cause);
    }
}
