package dev.memfit.train;

import dev.memfit.eval.TopicRecovery;
import dev.memfit.synthetic.SyntheticTopics;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TopicModelTest {

    private static SyntheticTopics.Corpus corpus;

    @BeforeAll
    static void generate() {
        corpus = SyntheticTopics.builder().setDocuments(1_000).setTerms(300).setTopics(4).setDocumentLength(500)
                .optSeed(11).generate();
    }

    @Test
    void syntheticCountsFollowTheirTopics() {
        double total = 0;
        for (long i = 0; i < corpus.counts().size(); i++) {
            for (int j = 0; j < 300; j++) {
                total += corpus.counts().data().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i * 300 + j);
            }
        }
        assertEquals(500.0, total / 1_000, 5.0, "mean document length");
        for (float[] topic : corpus.trueF()) {
            double sum = 0;
            for (float p : topic) {
                sum += p;
            }
            assertEquals(1.0, sum, 1e-4);
        }
    }

    /**
     * Dense updates (tinytopics' Adam over all of L) converge more slowly on L: measured here, 30 epochs at 0.05 give
     * 0.67 dense against 0.998 sparse, so the dense case runs longer with a larger step.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "sparse document updates: {0}, {1} epochs, lr {2}")
    @org.junit.jupiter.params.provider.CsvSource({"true, 30, 0.05", "false, 60, 0.2"})
    void recoversTheTrueTopics(boolean sparse, int epochs, double learningRate) {
        try (TopicModel model = TopicModel.builder().setTopics(4).optEpochs(epochs).optLearningRate(learningRate).optSeed(3)
                     .optSparseDocumentUpdates(sparse).build();
             Loader loader = Datasets.of(corpus.counts()).optBatchSize(64).optShuffle(5).build()) {
            FitResult fit = model.fit(loader);
            double score = TopicRecovery.score(model.topicTerms(), corpus.trueF());
            assertTrue(score > 0.9, "topic recovery " + score);
            double[] losses = fit.losses();
            assertEquals(epochs, losses.length);
            assertTrue(losses[epochs - 1] < losses[0], "loss should fall: " + losses[0] + " -> " + losses[epochs - 1]);
            float[] l0 = model.documentTopics(0);
            double sum = 0;
            for (float v : l0) {
                sum += v;
            }
            assertEquals(1.0, sum, 1e-4);
        }
    }

    @Test
    void recoveryOfUnrelatedTopicsIsLow() {
        try (SyntheticTopics.Corpus other = SyntheticTopics.builder().setDocuments(10).setTerms(300).setTopics(4)
                .setDocumentLength(50).optSeed(99).generate()) {
            assertTrue(TopicRecovery.score(other.trueF(), corpus.trueF()) < 0.5);
            assertEquals(1.0, TopicRecovery.score(corpus.trueF(), corpus.trueF()), 1e-9);
        }
    }

    @Test
    void mappedFileGivesTheSameLossCurveAsMemory(@TempDir Path dir) {
        Path file = dir.resolve("counts.npy");
        Npy.write(file, NpyHeader.of(dev.memfit.DType.FLOAT32, corpus.counts().size(), 300), corpus.counts().data());
        double[] inMemory;
        double[] mapped;
        try (TopicModel model = TopicModel.builder().setTopics(4).optEpochs(3).optSeed(8).build()) {
            try (Loader loader = Datasets.of(corpus.counts()).optBatchSize(100).optShuffle(21).build()) {
                inMemory = model.fit(loader).losses();
            }
            // a second fit starts again from the seed's parameters
            try (Loader loader = Datasets.npy(file).mapped().optBatchSize(100).optShuffle(21).optThreads(2).build()) {
                mapped = model.fit(loader).losses();
            }
        }
        for (int e = 0; e < inMemory.length; e++) {
            assertEquals(inMemory[e], mapped[e], 1e-6 * Math.abs(inMemory[e]), "same seed, same batches: the same loss, epoch " + e);
        }
    }

    @Test
    void refusesIntegerBatchesWithAHint(@TempDir Path dir) {
        Path file = dir.resolve("ints.npy");
        Npy.write(file, NpyHeader.of(dev.memfit.DType.INT32, 4, 3), java.lang.foreign.MemorySegment.ofArray(new int[12]));
        try (TopicModel model = TopicModel.builder().setTopics(2).build();
             Loader loader = Datasets.npy(file).mapped().optBatchSize(2).build()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> model.fit(loader));
            assertTrue(e.getMessage().contains(".optConvertTo(DType.FLOAT32)"));
        }
        assertThrows(IllegalArgumentException.class, () -> TopicModel.builder().build());
    }

    /** 4 micro-batches of 32 accumulate to one step of 128: the same parameters after two steps, both update modes. */
    @org.junit.jupiter.params.ParameterizedTest(name = "sparse document updates: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void gradientAccumulationEqualsTheLargeBatch(boolean sparse) {
        float[][] large;
        float[][] accumulated;
        float[] largeDocument;
        float[] accumulatedDocument;
        try (SyntheticTopics.Corpus small = SyntheticTopics.builder().setDocuments(256).setTerms(50).setTopics(3)
                .setDocumentLength(100).optSeed(5).generate();
             TopicModel oneStep = TopicModel.builder().setTopics(3).optEpochs(1).optLearningRate(0.05).optSeed(2)
                     .optSparseDocumentUpdates(sparse).build();
             TopicModel fourMicroBatches = TopicModel.builder().setTopics(3).optEpochs(1).optLearningRate(0.05).optSeed(2)
                     .optSparseDocumentUpdates(sparse).optGradientAccumulation(4).build()) {
            try (Loader loader = Datasets.of(small.counts()).optBatchSize(128).build()) {
                FitResult fit = oneStep.fit(loader);
                large = oneStep.topicTerms();
                largeDocument = oneStep.documentTopics(200);
                assertEquals(2, fit.steps(), "optimizer steps");
            }
            try (Loader loader = Datasets.of(small.counts()).optBatchSize(32).build()) {
                FitResult fit = fourMicroBatches.fit(loader);
                accumulated = fourMicroBatches.topicTerms();
                accumulatedDocument = fourMicroBatches.documentTopics(200);
                assertEquals(8, fit.history().getFirst().batches(), "batches read");
                assertEquals(2, fit.steps(), "optimizer steps");
            }
            double largest = 0;
            for (int t = 0; t < 3; t++) {
                for (int j = 0; j < 50; j++) {
                    largest = Math.max(largest, Math.abs(large[t][j] - accumulated[t][j]) / large[t][j]);
                }
                largest = Math.max(largest, Math.abs(largeDocument[t] - accumulatedDocument[t]) / largeDocument[t]);
            }
            assertTrue(largest < 1e-4, "largest relative difference " + largest);
            // without accumulation, batches of 32 take four different steps: a measurably different result
            try (Loader loader = Datasets.of(small.counts()).optBatchSize(32).build()) {
                oneStep.fit(loader);
                double differs = 0;
                for (int j = 0; j < 50; j++) {
                    differs = Math.max(differs, Math.abs(oneStep.topicTerms()[0][j] - large[0][j]) / large[0][j]);
                }
                assertTrue(differs > 1e-3, "four small steps should differ from two large ones: " + differs);
            }
            // and the update did something: the topics moved away from the uniform start
            assertTrue(Math.abs(large[0][0] - 1.0 / 50) > 1e-5);
        }
    }

    /**
     * A and L cross between host and device in pieces of whole rows (Java arrays end at 2^31 values, A need not):
     * pieces of 3 rows, of 1 row, and one piece give the same values, in the same order of the generator.
     */
    @Test
    void documentTablesMoveInPiecesWithTheSameValues() {
        try (ai.djl.ndarray.NDManager manager = Fit.engine().newBaseManager(ai.djl.Device.cpu())) {
            ai.djl.ndarray.types.Shape shape = new ai.djl.ndarray.types.Shape(10, 4);
            float[] whole = TopicModel.uniform(manager, new java.util.SplittableRandom(6), shape, 1 << 24).toFloatArray();
            for (int pieceValues : new int[]{12, 3, 1}) {
                ai.djl.ndarray.NDArray pieces = TopicModel.uniform(manager, new java.util.SplittableRandom(6), shape, pieceValues);
                assertArrayEquals(whole, pieces.toFloatArray(), "pieces of " + pieceValues + " values");
                try (dev.memfit.source.ArraySource inOne = TopicModel.toSource(pieces, 1 << 24);
                     dev.memfit.source.ArraySource inPieces = TopicModel.toSource(pieces, pieceValues)) {
                    float[] expected = inOne.data().toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT);
                    assertArrayEquals(expected, inPieces.data().toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT));
                    assertEquals(1.0, expected[36] + expected[37] + expected[38] + expected[39], 1e-6, "the last row sums to 1");
                }
            }
            assertTrue(Math.abs(whole[39]) > 0 && Math.abs(whole[39]) <= 0.1);
        }
    }
}
