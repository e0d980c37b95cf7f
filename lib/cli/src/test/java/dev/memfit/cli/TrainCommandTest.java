package dev.memfit.cli;

import dev.memfit.PythonPeer;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code memfit train --config}: the guide's config file, scaled down with {@code --set}, trains on shards of an
 * anndata-written atlas and prints its epochs; a typo in the file fails before anything runs, naming its line.
 */
class TrainCommandTest {

    /** The guide's config as the single-cell guide writes it (data-samples/train-atlas.yaml). */
    private static final Path GUIDE = Path.of("..", "..", "data-samples", "train-atlas.yaml");

    @Test
    void theGuidesConfigTrainsScaledDown(@TempDir Path dir) throws Exception {
        Path atlas = dir.resolve("atlas.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad, pandas as pd
                rng = np.random.default_rng(8)
                t = rng.choice(2, 300, p=[0.8, 0.2])
                mean = np.full((300, 40), 0.5)
                mean[t == 1, :8] *= 6
                obs = pd.DataFrame({'cell_type': pd.Categorical(np.array(['T', 'B'])[t])}, index=[f'c{i}' for i in range(300)])
                ad.AnnData(sp.csr_matrix(rng.poisson(mean).astype(np.float32)), obs=obs).write_h5ad(sys.argv[1])
                print('ok')
                """, atlas));
        ShardWriter.builder().setInput(atlas).optShardSize(100).write(dir.resolve("atlas_shards"));
        Path config = dir.resolve("train-atlas.yaml");
        Files.copy(GUIDE, config);
        CliRun run = CliRun.of("train", "--config", config.toString(), "--set", "model.d_model=16", "--set", "model.n_layers=1",
                "--set", "model.n_heads=2", "--set", "training.batch_size=50", "--set", "training.num_epochs=2",
                "--set", "tokenizer.max_length=12", "--set", "data.gene_selection.n_genes=30");
        assertEquals(0, run.status(), run.err());
        assertTrue(run.out().contains("masked-gene loss") && run.out().contains("from rank alone"), run.out());
        assertTrue(run.out().contains("30 gene tokens in the vocabulary, 12 tokens a cell, 2 cell types (cell_type)"), run.out());
        long epochs = run.out().lines().filter(line -> line.matches("^[12] +\\d+\\.\\d{4} +\\d+\\.\\d{4} +\\d+\\.\\d{4} +\\d+\\.\\d{4} .*")).count();
        assertEquals(2, epochs, run.out());
        assertTrue((run.out() + run.err()).contains("bf16-mixed") && (run.out() + run.err()).contains("training in float32"),
                "the engine's missing bfloat16 is said: " + run.out() + run.err());
        assertTrue(Files.list(dir.resolve("runs/atlas")).findAny().isPresent(), "checkpoints in training.checkpoint_dir");

        // the same run again: it resumes from the finished run's last checkpoint and trains no further; the epochs
        // restored from it are printed with their total loss only, never another epoch's parts
        CliRun again = CliRun.of("train", "--config", config.toString(), "--set", "model.d_model=16", "--set", "model.n_layers=1",
                "--set", "model.n_heads=2", "--set", "training.batch_size=50", "--set", "training.num_epochs=2",
                "--set", "tokenizer.max_length=12", "--set", "data.gene_selection.n_genes=30");
        assertEquals(0, again.status(), again.err());
        assertEquals(2, again.out().lines().filter(line -> line.matches("^[12] +- +- +- +- .*before the resume.*")).count(),
                again.out());

        CliRun printed = CliRun.of("train", "--config", config.toString(), "--set", "training.batch_size=64", "--print-config");
        assertEquals(0, printed.status(), printed.err());
        assertTrue(printed.out().contains("  batch_size: 64\n") && printed.out().contains("shard_dir: "
                + dir.resolve("atlas_shards")), printed.out());
    }

    @Test
    void aTypoFailsNamingItsLine(@TempDir Path dir) throws Exception {
        Path config = dir.resolve("train.yaml");
        String guide = Files.readString(GUIDE);
        Files.writeString(config, guide.replace("num_epochs: 10", "num_epoch: 10"));
        long line = guide.lines().takeWhile(l -> !l.contains("num_epochs: 10")).count() + 1;
        CliRun run = CliRun.of("train", "--config", config.toString());
        assertTrue(run.status() != 0);
        assertTrue(run.err().contains(config + " line " + line + ": unknown key training.num_epoch"), run.err());
    }
}
