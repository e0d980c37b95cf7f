package dev.memfit.cli;

import dev.memfit.sample.Subsets;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code memfit select-random N -n k -o ind.npy}: a random subset of sample indices, like cryoDRGN's select_random. */
@Command(name = "select-random", mixinStandardHelpOptions = true,
        description = "Choose k of N sample indices uniformly at random; writes a sorted int64 .npy.")
final class SelectRandomCommand implements Callable<Integer> {

    @Parameters(paramLabel = "N", description = "the number of samples")
    private long total;

    @Option(names = "-n", required = true, description = "how many to choose")
    private int count;

    @Option(names = {"-o", "--output"}, required = true, description = "the index file (.npy)")
    private Path output;

    @Option(names = "--seed", defaultValue = "0", description = "the seed (default ${DEFAULT-VALUE})")
    private long seed;

    @Override
    public Integer call() {
        if (count > total || count < 0 || total < 0) {
            throw new dev.memfit.MemfitException("cannot choose " + count + " of " + total + " samples");
        }
        Subsets.write(output, Subsets.random(total, count, seed));
        System.out.printf("wrote %d of %d indices to %s%n", count, total, output);
        return 0;
    }
}
