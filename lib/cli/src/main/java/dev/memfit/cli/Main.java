package dev.memfit.cli;

import dev.memfit.MemfitException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code memfit} command line: {@code inspect}, {@code bench}, {@code generate}.
 *
 * <p>The {@code ./memfit} launcher at the repository root adds {@code notebooks}, {@code lab} and {@code test}.
 */
@Command(name = "memfit", mixinStandardHelpOptions = true, version = "memfit 0.1.0",
        description = "Training on data larger than GPU memory or RAM: inspect files, run benchmarks, generate data.",
        subcommands = {InspectCommand.class, BenchCommand.class, GenerateCommand.class, SelectRandomCommand.class, PackCommand.class, EstimateCommand.class, ShardCommand.class, ShardCommand.Validate.class, PreprocessCommand.class})
public final class Main implements Runnable {

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

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
     * Runs the command line.
     *
     * @param args the arguments
     * @return the exit status: 0 on success, 1 when the input is bad, 2 on usage errors
     */
    public static int execute(String... args) {
        CommandLine commandLine = new CommandLine(new Main());
        commandLine.setExecutionExceptionHandler((exception, line, parseResult) -> {
            if (exception instanceof MemfitException) {
                line.getErr().println("memfit " + line.getCommandName() + ": " + exception.getMessage());
                return 1;
            }
            throw exception;
        });
        return commandLine.execute(args);
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }
}
