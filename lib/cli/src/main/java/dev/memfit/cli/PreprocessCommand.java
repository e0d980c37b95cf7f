package dev.memfit.cli;

import dev.memfit.MemfitException;
import dev.memfit.prep.Preprocess;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.List;
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
            System.out.println(whyMore(result.statistics(), highlyVariable));
        }
        return 0;
    }

    /**
     * Why more genes than asked were kept, as scanpy keeps them: genes tying at the n-th largest normalized
     * dispersion, and genes without one (NaN), which scanpy counts as 0 and so keeps when the cut-off is at most 0.
     */
    static String whyMore(Preprocess.GeneStatistics statistics, int highlyVariable) {
        double[] normalized = statistics.normalizedDispersions();
        int[] kept = statistics.selected();
        double[] defined = java.util.Arrays.stream(normalized).filter(v -> !Double.isNaN(v)).sorted().toArray();
        if (defined.length == 0) {
            return (kept.length - highlyVariable) + " more than --hvg " + highlyVariable + ", as scanpy keeps them";
        }
        double cutOff = defined[Math.max(0, defined.length - Math.min(highlyVariable, defined.length))];
        long undefined = java.util.Arrays.stream(kept).filter(g -> Double.isNaN(normalized[g])).count();
        long atCutOff = java.util.Arrays.stream(kept).filter(g -> normalized[g] == cutOff).count();
        List<String> reasons = new java.util.ArrayList<>();
        if (atCutOff > 1) {
            reasons.add(atCutOff + " genes tie at the " + highlyVariable + "-th largest normalized dispersion ("
                    + String.format(java.util.Locale.ROOT, "%.4g", cutOff) + ")");
        }
        if (undefined > 0) {
            reasons.add(undefined + " genes have no normalized dispersion (NaN: no variance across cells, or none within their mean bin), "
                    + "which scanpy counts as 0, at or above that cut-off");
        }
        return String.format(java.util.Locale.ROOT, "%d more than --hvg %d, as scanpy keeps them%s",
                kept.length - highlyVariable, highlyVariable, reasons.isEmpty() ? "" : ": " + String.join("; ", reasons));
    }
}
