package dev.memfit.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * One {@code memfit ARGS} run in this JVM, its exit status and what it printed.
 *
 * @param status the exit status
 * @param out what went to standard output
 * @param err what went to standard error
 */
record CliRun(int status, String out, String err) {

    /** Runs {@code memfit ARGS} through {@link Main#execute}, capturing both streams. */
    static CliRun of(String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int status = Main.execute(args);
            return new CliRun(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }
}
