package dev.memfit.train;

import dev.memfit.PythonPeer;
import dev.memfit.ProgressListener;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.data.Order;
import dev.memfit.sample.Labels;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The gene-token transformer on an atlas anndata writes, with three cell types each raising a program of genes:
 * rank-value tokens as defined, masked genes predicted better than their rank alone allows, cell types recovered,
 * bf16-mixed refused where the engine cannot hold it, a crashed run resumed, and the config's run end to end.
 */
class GeneTransformerTest {

    private static final int CELLS = 720;
    private static final int GENES = 60;

    @TempDir
    static Path dir;
    static Path shards;
    static int[] types;

    @BeforeAll
    static void atlas() throws Exception {
        Path file = dir.resolve("programs.h5ad");
        // background counts on every gene, and each type's 10-gene program raised 8-fold; imbalanced types
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad, pandas as pd
                rng = np.random.default_rng(4)
                n, g = %d, %d
                t = rng.choice(3, n, p=[0.6, 0.3, 0.1])
                mean = np.full((n, g), 0.4)
                for k in range(3):
                    mean[t == k, k * 10:(k + 1) * 10] *= 8
                x = rng.poisson(mean).astype(np.float32)
                obs = pd.DataFrame({'cell_type': pd.Categorical(np.array(['alpha', 'beta', 'gamma'])[t])},
                                   index=[f'c{i}' for i in range(n)])
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=pd.DataFrame(index=[f'g{j}' for j in range(g)])).write_h5ad(sys.argv[1])
                print('ok')
                """.formatted(CELLS, GENES), file));
        shards = dir.resolve("shards");
        ShardWriter.builder().setInput(file).optShardSize(250).write(shards);
        try (ShardStore store = ShardStore.open(shards)) {
            Labels labels = store.labels("cell_type");
            assertEquals(List.of("alpha", "beta", "gamma"), labels.names());
            types = labels.codes();
        }
    }

    private static Loader cells(int batch, Order order) {
        return Datasets.shards(shards).optSparseBatches(true).optBatchSize(batch).optOrder(order).build();
    }

    /** Tokens are the expressed genes by expression over the gene's own mean, highest first, then padding. */
    @Test
    void rankValueTokens() {
        RankValueTokens tokens;
        try (Loader all = cells(100, Order.sequential())) {
            tokens = RankValueTokens.fit(all, 25, 12, ProgressListener.silent());
        }
        assertEquals(27, tokens.vocabularySize(), "25 genes, padding and the mask");
        try (Loader some = cells(5, Order.sequential())) {
            Batch batch = some.epoch(0).iterator().next();
            RankValueTokens.Tokens made = tokens.tokenize(batch);
            float[] dense = batch.toFloatArray();
            for (int cell = 0; cell < 5; cell++) {
                int n = made.lengths()[cell];
                long expressedKept = 0;
                for (int g = 0; g < GENES; g++) {
                    expressedKept += dense[cell * GENES + g] > 0 && tokenOf(tokens, g) >= 0 ? 1 : 0;
                }
                assertEquals(Math.min(12, expressedKept), n, "cell " + cell);
                double total = 0;
                for (int g = 0; g < GENES; g++) {
                    total += dense[cell * GENES + g];
                }
                double previous = Double.MAX_VALUE;
                for (int i = 0; i < 12; i++) {
                    long id = made.ids()[cell * 12 + i];
                    if (i >= n) {
                        assertEquals(RankValueTokens.PAD, id, "padding after the genes");
                        continue;
                    }
                    int column = tokens.columnOf((int) id);
                    float value = dense[cell * GENES + column];
                    double rank = value / total / tokens.geneScale(column);
                    assertTrue(value > 0 && rank <= previous * (1 + 1e-6), "cell " + cell + " token " + i);
                    previous = rank;
                }
            }
        }
    }

    private static int tokenOf(RankValueTokens tokens, int column) {
        for (int id = RankValueTokens.FIRST_GENE; id < tokens.vocabularySize(); id++) {
            if (tokens.columnOf(id) == column) {
                return id;
            }
        }
        return -1;
    }

    /** Masked genes are predicted from the rest of the cell, below the unigram loss; cell types are recovered. */
    @Test
    void learnsGenePrograms() {
        RankValueTokens tokens;
        try (Loader all = cells(240, Order.sequential())) {
            tokens = RankValueTokens.fit(all, 0, 24, ProgressListener.silent());
        }
        try (GeneTransformer model = GeneTransformer.builder().setTokens(tokens).optLabels(types, 3).optModel(32, 2, 4)
                .optEpochs(20).optLearningRate(3e-3).optSeed(5).optProgress(ProgressListener.silent()).build();
             Loader train = cells(32, Order.shuffle(3));
             Loader all = cells(240, Order.sequential())) {
            model.fit(train);
            List<GeneTransformer.EpochLosses> losses = model.epochLosses();
            assertEquals(20, losses.size());
            GeneTransformer.EpochLosses last = losses.get(19);
            assertEquals(20, last.epoch());
            // measured: 4.08 against 3.74 in epoch 1 (the rank alone is worth more than an untrained model), then below it
            assertTrue(losses.get(0).maskedGenes() > losses.get(0).rankBaseline(), "an untrained model: " + losses.get(0));
            assertTrue(losses.stream().anyMatch(l -> l.maskedGenes() < l.rankBaseline() - 0.05),
                    "masked-gene loss vs the rank alone: " + losses);
            assertTrue(last.rankBaseline() < last.unigramBaseline(), "the rank says more than the frequencies: " + last);
            assertTrue(last.cellType() < losses.get(0).cellType(), losses.toString());
            assertEquals(CELLS, last.cells());
            int[] predicted = model.predict(all);
            double[] recall = CellClassifier.recallPerClass(predicted, types, 3);
            for (int c = 0; c < 3; c++) {
                assertTrue(recall[c] > 0.9, "recall of type " + c + ": " + Arrays.toString(recall));
            }
        }
    }

    /** The estimator's count of parameters is the model's, layer by layer, with and without the cell-type head. */
    @Test
    void theMemoryEstimateCountsTheParametersTheModelHas() {
        RankValueTokens tokens;
        try (Loader all = cells(240, Order.sequential())) {
            tokens = RankValueTokens.fit(all, 0, 16, ProgressListener.silent());
        }
        for (int classes : new int[]{0, 3}) {
            GeneTransformer.Builder builder = GeneTransformer.builder().setTokens(tokens).optModel(24, 3, 4);
            if (classes > 0) {
                builder.optLabels(types, classes);
            }
            try (GeneTransformer model = builder.build()) {
                long counted = model.parameters().values().stream().mapToLong(ai.djl.ndarray.NDArray::size).sum();
                assertEquals(counted, new dev.memfit.memory.TransformerShape(tokens.vocabularySize(), 16, 24, 3, 4, classes,
                        GeneTransformer.DEFAULT_MASK_SHARE).parameters(), "classes " + classes);
            }
        }
    }

    /**
     * bf16-mixed where the engine cannot hold bfloat16 (DJL 0.35's PyTorch): the builder refuses it, the config's run
     * says it trains in float32 instead.
     */
    @Test
    void bf16IsRefusedWhereTheEngineCannotHoldIt() {
        RankValueTokens tokens;
        try (Loader all = cells(240, Order.sequential())) {
            tokens = RankValueTokens.fit(all, 0, 16, ProgressListener.silent());
        }
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> GeneTransformer.builder().setTokens(tokens).optBf16(true).build());
        assertTrue(e.getMessage().contains("cannot hold bfloat16") && e.getMessage().contains("32-true"), e.getMessage());
    }

    /**
     * A run with accumulation and a weighted curriculum crashes inside its second epoch and resumes from its last
     * checkpoint: every step's loss equals the uninterrupted run's (the masking is a function of seed, epoch, batch).
     */
    @Test
    void aCrashedRunResumesToTheUninterruptedOne(@TempDir Path runs) {
        RankValueTokens tokens;
        try (Loader all = cells(240, Order.sequential())) {
            tokens = RankValueTokens.fit(all, 0, 16, ProgressListener.silent());
        }
        java.util.function.Function<ProgressListener, GeneTransformer.Builder> model = progress -> GeneTransformer.builder()
                .setTokens(tokens).optLabels(types, 3).optModel(16, 1, 2).optEpochs(3).optGradientAccumulation(2)
                .optSeed(2).optProgress(progress);
        java.util.function.Function<GeneTransformer.Builder, FitResult> fit = builder -> {
            try (GeneTransformer transformer = builder.build(); Loader train = cells(60, Order.weighted(types, 4, 2))) {
                return transformer.fit(train);
            }
        };
        FitResult straight = fit.apply(model.apply(ProgressListener.silent()));
        Checkpoints policy = Checkpoints.builder().setFolder(runs).optEverySteps(4).build();
        ProgressListener crashAt17 = (task, total, unit) -> new ProgressListener.Task() {
            long done;

            @Override
            public void step(long steps) {
                done += steps;
                if (done >= 17) {
                    throw new IllegalStateException("simulated crash");
                }
            }
        };
        org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> fit.apply(model.apply(crashAt17).optCheckpoints(policy)));
        FitResult resumed = fit.apply(model.apply(ProgressListener.silent()).optCheckpoints(policy));
        assertTrue(resumed.resumedFrom().isPresent(), "resumed from a checkpoint");
        assertArrayEquals(straight.stepLosses(), resumed.stepLosses(), 0.0, "every step's loss");
        assertArrayEquals(straight.losses(), resumed.losses(), 0.0, "every epoch's loss");
    }

    /** A label column the config names must exist; the default one may be absent (pretraining only, said). */
    @Test
    void aNamedLabelColumnMustExist() {
        String guide = TrainConfigTest.GUIDE.replace("./atlas_shards/", shards.toString());
        TrainConfig named = TrainConfig.parse(guide, dir, List.of("training.sampling.strategy=uniform",
                "training.sampling.label_key=celltype"));
        dev.memfit.MemfitException e = org.junit.jupiter.api.Assertions.assertThrows(dev.memfit.MemfitException.class,
                () -> named.train(ProgressListener.silent()));
        assertTrue(e.getMessage().contains("label_key is celltype") && e.getMessage().contains("have no such column")
                && e.getMessage().contains("cell_type"), e.getMessage());
    }

    /** The guide's config, scaled down: shards, weighted curriculum, tokens, checkpoints, end to end. */
    @Test
    void theConfigRunsEndToEnd() throws Exception {
        Path config = dir.resolve("run").resolve("atlas.yaml");
        Files.createDirectories(config.getParent());
        Files.writeString(config, TrainConfigTest.GUIDE.replace("./atlas_shards/", shards.toString()));
        TrainConfig settings = TrainConfig.load(config, List.of("model.d_model=16", "model.n_layers=1", "model.n_heads=2",
                "tokenizer.max_length=16", "training.batch_size=64", "training.num_epochs=2", "training.precision=32-true",
                "data.gene_selection.n_genes=40", "training.precision=bf16-mixed"));
        List<String> notes = new java.util.ArrayList<>();
        ProgressListener listening = new ProgressListener() {
            @Override
            public Task start(String task, long total, String unit) {
                return steps -> { };
            }

            @Override
            public void note(String line) {
                notes.add(line);
            }
        };
        try (TrainConfig.Trained run = settings.train(listening)) {
            assertTrue(notes.stream().anyMatch(n -> n.contains("bf16-mixed") && n.contains("training in float32")), notes.toString());
            assertEquals(2, run.fit().epochs());
            assertEquals(42, run.tokens().vocabularySize());
            assertEquals(List.of("alpha", "beta", "gamma"), run.labels().names());
            assertEquals(List.of(1, 2), run.model().epochLosses().stream().map(GeneTransformer.EpochLosses::epoch).toList());
            assertTrue(run.model().epochLosses().stream().noneMatch(l -> Double.isNaN(l.cellType())), "a cell-type head");
            assertTrue(Files.list(config.getParent().resolve("runs/atlas")).findAny().isPresent(), "checkpoints written");
            assertArrayEquals(new long[]{CELLS, CELLS}, run.fit().history().stream().mapToLong(s -> s.samples()).toArray(),
                    "every epoch draws as many cells as the shards hold");
        }
    }
}
