package dev.memfit.cli;

import dev.memfit.prep.Preprocess;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code memfit preprocess}: normalize, log1p and keep the highly variable genes, out of core. */
@Command(name = "preprocess", mixinStandardHelpOptions = true,
        description = "Normalize each cell to --target-sum counts, log1p, keep the --hvg most variable genes "
                + "(Seurat flavour), in two passes over X; the output .h5ad reads in anndata.")
final class PreprocessCommand implements Callable<Integer> {

    @Option(names = "--input", required = true, description = "raw counts (.h5ad)")
    private Path input;
    @Option(names = "--output", required = true, description = "the processed .h5ad to write")
    private Path output;
    @Option(names = "--hvg", defaultValue = "4000", description = "highly variable genes to keep (default ${DEFAULT-VALUE})")
    private int highlyVariable;
    @Option(names = "--target-sum", defaultValue = "10000", description = "counts per cell after normalization (default ${DEFAULT-VALUE})")
    private double targetSum;

    @Override
    public Integer call() {
        Preprocess.Result result = Preprocess.builder().setInput(input).optHighlyVariable(highlyVariable)
                .optTargetSum(targetSum).run(output);
        System.out.printf("wrote %s: %d cells x %d highly variable genes (of %d), normalized to %.0f counts, log1p%n",
                result.output(), result.cells(), result.genes(), result.statistics().genes().length, targetSum);
        return 0;
    }
}
