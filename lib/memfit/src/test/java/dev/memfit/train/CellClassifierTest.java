package dev.memfit.train;

import ai.djl.ndarray.types.Shape;
import dev.memfit.MemfitException;
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
        int cells = 3_000;
        int genes = 40;
        int[] labels = new int[cells];
        SplittableRandom random = new SplittableRandom(5);
        try (ArraySource counts = ArraySource.allocate("atlas", cells, new Shape(genes), DType.FLOAT32)) {
            for (int i = 0; i < cells; i++) {
                labels[i] = i % 100 == 0 ? 2 : i % 10 == 0 ? 1 : 0;        // 89% / 10% / 1%
                for (int g = 0; g < genes; g++) {
                    // each type expresses its own program of genes more strongly
                    double rate = g / 10 == labels[i] ? 8 : 2;
                    counts.data().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, (long) i * genes + g,
                            (float) Math.floor(rate * -Math.log(1 - random.nextDouble())));
                }
            }
            try (CellClassifier classifier = CellClassifier.builder().setClasses(3).optEpochs(6).optLearningRate(0.01).build();
                 Loader train = Datasets.of(counts).optBatchSize(64).optSampler(new WeightedSampler(labels, 1, 2)).build();
                 Loader all = Datasets.of(counts).optBatchSize(500).build()) {
                var history = classifier.fit(train, labels, stats -> { });
                assertTrue(history.get(5).loss() < history.get(0).loss(), "loss falls");
                double[] recall = CellClassifier.recallPerClass(classifier.predict(all), labels, 3);
                for (int c = 0; c < 3; c++) {
                    assertTrue(recall[c] > 0.8, "recall of class " + c + ": " + recall[c]);
                }
            }
        }
        assertArrayEquals(new double[]{0.5, 1.0}, CellClassifier.recallPerClass(new int[]{0, 1, 1}, new int[]{0, 0, 1}, 2), 1e-12);
    }
}
