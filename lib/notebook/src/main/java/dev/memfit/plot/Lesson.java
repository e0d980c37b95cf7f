package dev.memfit.plot;

import dev.memfit.MemfitException;

import java.io.PrintStream;

/**
 * A notebook's claim checked against what was measured on this machine: the claim and the measurement are printed
 * together, and a claim that does not hold here fails the run instead of sitting in the prose as a falsehood.
 *
 * <pre>{@code
 * Lesson.expect("sparse shards take at most 1.2x the source's X on disk", shardBytes <= 1.2 * xBytes,
 *         String.format("%.0f MB of shards for %.0f MB of X", shardBytes / 1e6, xBytes / 1e6));
 * }</pre>
 */
public final class Lesson {

    private Lesson() {
    }

    /** A claim that the measurements of this run contradict. */
    public static final class Failed extends MemfitException {
        private Failed(String message) {
            super(message);
        }
    }

    /**
     * Prints the claim with its measurement, and fails when it does not hold.
     *
     * @param claim what the notebook teaches, as a sentence
     * @param holds whether this run's measurements support it
     * @param measured the numbers behind it, for the reader to judge
     * @throws Failed when {@code holds} is false, naming the claim and the measurement
     */
    public static void expect(String claim, boolean holds, String measured) {
        expect(claim, holds, measured, System.out);
    }

    static void expect(String claim, boolean holds, String measured, PrintStream out) {
        if (claim == null || claim.isBlank()) {
            throw new IllegalArgumentException("a lesson needs its claim in words");
        }
        if (!holds) {
            out.println("FAILED lesson: " + claim + " (measured: " + measured + ")");
            throw new Failed("This run contradicts the notebook's lesson \"" + claim + "\": measured " + measured
                    + ". The text is wrong for this machine or size; look at the measurement before trusting the prose.");
        }
        out.println("lesson holds: " + claim + " (measured: " + measured + ")");
    }
}
