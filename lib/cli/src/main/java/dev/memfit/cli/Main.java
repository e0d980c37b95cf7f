package dev.memfit.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.nio.file.Path;

/**
 * The {@code memfit} command line: {@code inspect}, {@code bench}, {@code generate}.
 *
 * <p>The {@code ./memfit} launcher at the repository root adds {@code notebooks}, {@code lab} and {@code test}.
 */
@Command(name = "memfit", mixinStandardHelpOptions = true, version = "memfit 0.1.0",
        description = "Training on data larger than GPU memory or RAM: inspect files, run benchmarks, generate data.",
        subcommands = {InspectCommand.class, BenchCommand.class, GenerateCommand.class, SelectRandomCommand.class, PackCommand.class, EstimateCommand.class, ShardCommand.class, ShardCommand.Validate.class, PreprocessCommand.class, CacheCommand.class, TrainCommand.class})
public final class Main implements Runnable {

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    /** Inherited by every command, so that {@code ./memfit shard --stacktrace ...} works: read in {@link #debug}. */
    @CommandLine.Option(names = "--stacktrace", scope = CommandLine.ScopeType.INHERIT,
            description = "on a failure, print the stack trace after the message (or set MEMFIT_DEBUG=1)")
    private boolean stacktrace;

    /** Creates the top-level command; use {@link #execute(String...)}. */
    public Main() {
        // picocli instantiates it; the spec is injected.
    }

    /**
     * Runs the command line and exits with its status.
     *
     * @param args the arguments
     */
    public static void main(String[] args) {
        System.exit(execute(args));
    }

    /**
     * Runs the command line. A failure is reported as one line on standard error, {@code memfit COMMAND: ...} naming
     * the file, what was expected, what was found and what to do, never as a stack trace; {@code --stacktrace} (on
     * any command) or the environment variable {@code MEMFIT_DEBUG=1} adds the trace after the line.
     *
     * @param args the arguments
     * @return the exit status: 0 on success, 1 when the input is bad, the environment fails (a full disk, a folder
     *         one cannot write) or memfit has a bug, 2 on usage errors
     */
    public static int execute(String... args) {
        CommandLine commandLine = new CommandLine(new Main());
        commandLine.setExecutionExceptionHandler((exception, line, parseResult) -> fail(exception, line, parseResult));
        commandLine.setParameterExceptionHandler((exception, arguments) -> {
            CommandLine line = exception.getCommandLine();
            String message = exception.getMessage();
            if (exception instanceof CommandLine.UnmatchedArgumentException unmatched && !unmatched.getSuggestions().isEmpty()) {
                message += " (did you mean " + String.join(" or ", unmatched.getSuggestions()) + "?)";
            }
            line.getErr().println(prefix(line) + message.strip().replaceAll("\\s*\\R\\s*", " ") + " (see '"
                    + line.getCommandSpec().qualifiedName() + " --help')");
            if (debug(line.getParseResult())) {
                exception.printStackTrace(line.getErr());
            }
            return line.getCommandSpec().exitCodeOnInvalidInput();
        });
        try {
            return commandLine.execute(args);
        } catch (Throwable error) {
            // errors (a mapped write faulting on a full disk, out of memory) are not handed to the handler by picocli
            CommandLine.ParseResult parsed = commandLine.getParseResult();
            CommandLine line = commandLine;
            for (CommandLine.ParseResult sub = parsed; sub != null; sub = sub.subcommand()) {
                line = sub.commandSpec().commandLine();
            }
            return fail(error, line, parsed);
        }
    }

    /** Prints the one line for a failure (and the trace when debugging); the exit status. */
    private static int fail(Throwable error, CommandLine line, CommandLine.ParseResult parseResult) {
        line.getErr().println(prefix(line) + Failures.describe(error, output(parseResult)));
        if (debug(parseResult)) {
            error.printStackTrace(line.getErr());
        }
        line.getErr().flush();
        return 1;
    }

    /** {@code memfit shard: }, or {@code memfit: } for the top-level command. */
    private static String prefix(CommandLine line) {
        return line.getParent() == null ? "memfit: " : "memfit " + line.getCommandSpec().qualifiedName(" ").replaceFirst("^memfit ", "") + ": ";
    }

    /** Whether --stacktrace was given on any command of the line, or MEMFIT_DEBUG is set to 1 (or true). */
    private static boolean debug(CommandLine.ParseResult parseResult) {
        String variable = System.getenv("MEMFIT_DEBUG");
        if ("1".equals(variable) || "true".equalsIgnoreCase(variable)) {
            return true;
        }
        for (CommandLine.ParseResult result = parseResult; result != null; result = result.subcommand()) {
            if (result.hasMatchedOption("--stacktrace")) {
                return true;
            }
        }
        return false;
    }

    /** What the command writes, by the output options the commands use, or null. */
    private static Path output(CommandLine.ParseResult parseResult) {
        Object value = null;
        for (CommandLine.ParseResult result = parseResult; result != null; result = result.subcommand()) {
            for (String name : new String[]{"--output-dir", "--output"}) {
                if (result.hasMatchedOption(name)) {
                    value = result.matchedOptionValue(name, null);
                }
            }
        }
        return value == null ? null : Path.of(String.valueOf(value));
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }
}
