package dev.memfit.cli;

import dev.memfit.MemfitException;
import dev.memfit.prep.Preprocess;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code memfit preprocess}: normalize, log1p and keep the highly variable genes, out of core. */
@Command(name = "preprocess", mixinStandardHelpOptions = true,
        description = "Normalize each cell to --target-sum counts, log1p, keep the --hvg most variable genes "
                + "(Seurat flavour; more on ties, as scanpy), in two passes over X; the output .h5ad reads in anndata. "
                + "A float64 X is computed and written in float64, a float32 (or integer) X in float32. --engine spark "
                + "runs both passes on Apache Spark: the same genes and values.")
final class PreprocessCommand implements Callable<Integer> {

    @Option(names = "--input", required = true, description = "raw counts (.h5ad)")
    private Path input;
    @Option(names = "--output", required = true, description = "the processed .h5ad to write")
    private Path output;
    @Option(names = "--hvg", defaultValue = "4000", description = "highly variable genes to keep (default "
            + "${DEFAULT-VALUE}): those whose normalized dispersion reaches the N-th largest, so a few more than N "
            + "when genes tie with it, as scanpy keeps them")
    private int highlyVariable;
    @Option(names = "--target-sum", defaultValue = "10000", description = "counts per cell after normalization (default ${DEFAULT-VALUE})")
    private double targetSum;

    @Option(names = "--layer", defaultValue = "X", description = "the matrix read: X (default), raw/X (raw counts, with "
            + "the genes of raw/var), or a layer such as counts (layers/counts)")
    private String layer;

    @Option(names = "--engine", defaultValue = "local", description = "local (this process) or spark (Apache Spark: "
            + "./memfit puts its jars and flags on the class path; options --master local[*] and --conf KEY=VALUE)")
    private String engine;

    @Override
    public Integer call() {
        if (engine.equals("spark")) {
            throw new MemfitException("--engine spark runs through ./memfit preprocess --engine spark, which puts Spark's "
                    + "jars (lib/spark/target/classpath.txt) and its JVM flags on the class path; this JVM has neither");
        }
        if (!engine.equals("local")) {
            throw new MemfitException("--engine: expected local or spark, found '" + engine + "'");
        }
        Preprocess.Result result = Preprocess.builder().setInput(input).optHighlyVariable(highlyVariable)
                .optTargetSum(targetSum).optLayer(layer).run(output);
        System.out.printf("wrote %s: %d cells x %d highly variable genes (of %d), normalized to %.0f counts, log1p, %s%n",
                result.output(), result.cells(), result.genes(), result.statistics().genes().length, targetSum,
                result.valueType().name().toLowerCase(java.util.Locale.ROOT));
        if (result.genes() > highlyVariable) {
            System.out.printf("%d more than --hvg %d: their normalized dispersion ties with the %d-th largest (scanpy keeps "
                    + "them too)%n", result.genes() - highlyVariable, highlyVariable, highlyVariable);
        }
        return 0;
    }
}
