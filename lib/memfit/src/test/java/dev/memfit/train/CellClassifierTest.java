package dev.memfit.train;

import ai.djl.ndarray.types.Shape;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.source.ArraySource;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.DType;
import dev.memfit.sample.Labels;
import dev.memfit.sample.WeightedSampler;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CellClassifierTest {

    @Test
    void labelsAreEncodedBySortedName() {
        Labels labels = Labels.of(new String[]{"T", "B", "T", "NK"}, "cell_type");
        assertEquals(List.of("B", "NK", "T"), labels.names());
        assertArrayEquals(new int[]{2, 0, 2, 1}, labels.codes());
        assertArrayEquals(new double[]{0.25, 0.25, 0.5}, labels.frequencies(), 1e-12);
        MemfitException e = assertThrows(MemfitException.class, () -> Labels.of(new String[]{"B", null}, "cell_type"));
        assertTrue(e.getMessage().contains("label column 'cell_type' has no value for sample 1"), e.getMessage());
    }

    @Test
    void learnsImbalancedCellTypesWithWeightedSampling() {
        int[] labels = new int[3_000];
        try (ArraySource counts = atlas(labels, 40)) {
            try (CellClassifier classifier = CellClassifier.builder().setClasses(3).setLabels(labels).optEpochs(6)
                         .optLearningRate(0.01).build();
                 Loader train = Datasets.of(counts).optBatchSize(64).optSampler(new WeightedSampler(labels, 1, 2)).build();
                 Loader all = Datasets.of(counts).optBatchSize(500).build()) {
                var history = classifier.fit(train).history();
                assertTrue(history.get(5).loss() < history.get(0).loss(), "loss falls");
                double[] recall = CellClassifier.recallPerClass(classifier.predict(all), labels, 3);
                for (int c = 0; c < 3; c++) {
                    assertTrue(recall[c] > 0.8, "recall of class " + c + ": " + recall[c]);
                }
            }
        }
        assertArrayEquals(new double[]{0.5, 1.0}, CellClassifier.recallPerClass(new int[]{0, 1, 1}, new int[]{0, 0, 1}, 2), 1e-12);
    }

    /** The .h5ad stream is a Loader like any other: a classifier trains on it and predicts every cell once. */
    @Test
    void trainsAndPredictsFromAnH5adStream(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        java.nio.file.Path file = dir.resolve("types.h5ad");
        // three cell types, each with 5 marker genes of its own; anndata's defaults (CSR X, chunked datasets)
        assertEquals("ok", dev.memfit.PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad, pandas as pd
                rng = np.random.default_rng(3)
                types = rng.integers(0, 3, 900)
                x = rng.poisson(1.0, (900, 30)).astype(np.float32)
                for t in range(3):
                    x[types == t, t * 5:(t + 1) * 5] += rng.poisson(6.0, ((types == t).sum(), 5))
                obs = pd.DataFrame({'cell_type': pd.Categorical(np.array(['B', 'NK', 'T'])[types])},
                                   index=[f'c{i}' for i in range(900)])
                ad.AnnData(sp.csr_matrix(x), obs=obs).write_h5ad(sys.argv[1])
                print('ok')
                """, file));
        int[] labels;
        try (dev.memfit.io.hdf5.H5ad h5ad = dev.memfit.io.hdf5.H5ad.open(file)) {
            labels = Labels.of((String[]) h5ad.columns("obs").get("cell_type"), "cell_type").codes();
        }
        try (CellClassifier classifier = CellClassifier.builder().setClasses(3).setLabels(labels).optEpochs(4)
                     .optLearningRate(0.01).optProgress(ProgressListener.silent()).build();
             Loader stream = Datasets.h5ad(file).optBlockShuffle(100, 9).optBatchSize(32)
                     .optShuffle(2).build()) {
            FitResult fit = classifier.fit(stream);
            assertEquals(4 * 29, fit.history().stream().mapToLong(EpochStats::batches).sum(), "29 batches per epoch");
            assertEquals(4 * 900, fit.samples(), "every cell once per epoch");
            assertTrue(fit.losses()[3] < fit.losses()[0], "loss falls");
            double[] recall = CellClassifier.recallPerClass(classifier.predict(stream), labels, 3);
            for (int c = 0; c < 3; c++) {
                assertTrue(recall[c] > 0.9, "recall of class " + c + ": " + recall[c]);
            }
        }
    }

    /**
     * 4 micro-batches of 32 accumulate to one step of 128: the same losses and predicted classes. 500 cells make a
     * short last step (116 cells: three batches of 32 and one of 20), whose gradient is the mean over its own cells
     * as in the loader of 128.
     */
    @Test
    void accumulationEqualsTheLargeBatch() {
        int[] labels = new int[500];
        try (ArraySource counts = atlas(labels, 30)) {
            double[] large;
            int[] largePredictions;
            try (CellClassifier classifier = classifier(labels, 1);
                 Loader loader = Datasets.of(counts).optBatchSize(128).optShuffle(4).build()) {
                FitResult fit = classifier.fit(loader);
                assertEquals(12, fit.steps(), "4 steps in each of 3 epochs");
                large = fit.losses();
                largePredictions = classifier.predict(loader);
            }
            try (CellClassifier classifier = classifier(labels, 4);
                 Loader loader = Datasets.of(counts).optBatchSize(32).optShuffle(4).build()) {
                FitResult fit = classifier.fit(loader);
                assertEquals(16, fit.history().getFirst().batches());
                assertEquals(12, fit.steps(), "16 batches in groups of 4, in each of 3 epochs");
                assertArrayEquals(large, fit.losses(), 1e-5 * large[0]);
                assertArrayEquals(largePredictions, classifier.predict(loader));
            }
            try (CellClassifier classifier = classifier(labels, 1);
                 Loader loader = Datasets.of(counts).optBatchSize(32).optShuffle(4).build()) {
                double[] small = classifier.fit(loader).losses();
                assertTrue(Math.abs(small[2] - large[2]) > 1e-3 * large[2], "batches of 32 without accumulation take "
                        + "other steps: " + small[2] + " vs " + large[2]);
            }
        }
    }

    @Test
    void refusesLabelsThatDoNotFit() {
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> CellClassifier.builder().setClasses(2).build());
        assertTrue(missing.getMessage().contains("setLabels"), missing.getMessage());
        IllegalArgumentException outside = assertThrows(IllegalArgumentException.class,
                () -> CellClassifier.builder().setClasses(2).setLabels(new int[]{0, 2}).build());
        assertTrue(outside.getMessage().contains("sample 1 is 2"), outside.getMessage());
        int[] labels = new int[100];
        try (ArraySource counts = atlas(labels, 30);
             CellClassifier classifier = CellClassifier.builder().setClasses(3).setLabels(new int[50]).build();
             Loader loader = Datasets.of(counts).optBatchSize(10).build()) {
            IllegalArgumentException tooFew = assertThrows(IllegalArgumentException.class, () -> classifier.fit(loader));
            assertTrue(tooFew.getMessage().contains("50 labels") && tooFew.getMessage().contains("100 samples"),
                    tooFew.getMessage());
        }
    }

    private static CellClassifier classifier(int[] labels, int accumulation) {
        return CellClassifier.builder().setClasses(3).setLabels(labels).optHidden(16).optEpochs(3).optLearningRate(0.01)
                .optSeed(9).optGradientAccumulation(accumulation).optProgress(ProgressListener.silent()).build();
    }

    /** Cells of three types (89%, 10%, 1%), each expressing its own block of 10 genes more strongly. */
    static ArraySource atlas(int[] labels, int genes) {
        SplittableRandom random = new SplittableRandom(5);
        ArraySource counts = ArraySource.allocate("atlas", labels.length, new Shape(genes), DType.FLOAT32);
        for (int i = 0; i < labels.length; i++) {
            labels[i] = i % 100 == 0 ? 2 : i % 10 == 0 ? 1 : 0;
            for (int g = 0; g < genes; g++) {
                double rate = g / 10 == labels[i] ? 8 : 2;
                counts.data().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, (long) i * genes + g,
                        (float) Math.floor(rate * -Math.log(1 - random.nextDouble())));
            }
        }
        return counts;
    }
}
