package dev.memfit.train;

import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The config of {@code ./memfit train --config}: the single-cell guide's file as it is, its keys read with their
 * values, overrides, and every kind of mistake refused naming the line and the key.
 */
class TrainConfigTest {

    /** The guide's config as it is, from data-samples/train-atlas.yaml (its header comments included). */
    static final String GUIDE = guide();

    static String guide() {
        try {
            return Files.readString(Path.of("..", "..", "data-samples", "train-atlas.yaml"));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The line of the guide that holds a fragment, from 1. */
    static int lineOf(String fragment) {
        List<String> lines = GUIDE.lines().toList();
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(fragment)) {
                return i + 1;
            }
        }
        throw new AssertionError(fragment + " is not in the guide's config");
    }

    @TempDir
    Path dir;

    @Test
    void theGuidesConfigReadsAsWritten() throws IOException {
        Path file = dir.resolve("configs").resolve("train-atlas.yaml");
        Files.createDirectories(file.getParent());
        Files.writeString(file, GUIDE);
        TrainConfig config = TrainConfig.load(file);
        assertEquals(file, config.file());
        assertEquals(file.getParent().resolve("atlas_shards").toString(), config.data().shardDir(), "relative to the config");
        assertEquals("most_expressed", config.data().geneStrategy());
        assertEquals(2048, config.data().genes());
        TrainConfig.Training training = config.training();
        assertEquals(256, training.batchSize());
        assertEquals(10, training.epochs());
        assertEquals(2, training.accumulation());
        assertTrue(training.bf16());
        assertTrue(training.pinMemory());
        assertTrue(training.weighted());
        assertEquals("cell_type", training.labelKey());
        assertEquals(3, training.warmupEpochs());
        assertEquals(file.getParent().resolve("runs/atlas"), training.checkpointDir());
        assertEquals(new TrainConfig.Model("transformer_encoder", 512, 8, 8), config.model());
        assertEquals(new TrainConfig.Tokenizer("rank_value", 2048), config.tokenizer());
        // what a run used, written back, reads as the same config
        assertEquals(config.withoutFile(), TrainConfig.parse(config.toYaml(), file.getParent(), List.of()).withoutFile());
    }

    @Test
    void overridesApplyInOrder() {
        TrainConfig config = TrainConfig.parse(GUIDE, dir, List.of("training.batch_size=64", "model.d_model=32",
                "model.n_heads=4", "training.precision=32-true", "training.batch_size=16", "training.checkpoint_dir="));
        assertEquals(16, config.training().batchSize());
        assertEquals(32, config.model().dModel());
        assertFalse(config.training().bf16());
        assertNull(config.training().checkpointDir(), "an empty checkpoint folder: none");
    }

    @Test
    void missingKeysTakeDefaultsButTheShardsAreRequired() {
        TrainConfig config = TrainConfig.parse("data:\n  shards:\n    shard_dir: s\n", dir, List.of());
        assertEquals(256, config.training().batchSize());
        assertFalse(config.training().weighted());
        assertEquals(2048, config.tokenizer().maxLength());
        MemfitException e = assertThrows(MemfitException.class, () -> TrainConfig.parse("training:\n  batch_size: 8\n", dir, List.of()));
        assertTrue(e.getMessage().contains("data.shards.shard_dir is required"), e.getMessage());
    }

    private static String refused(String yaml, String... overrides) {
        return assertThrows(MemfitException.class, () -> TrainConfig.parse(yaml, Path.of("."), List.of(overrides))).getMessage();
    }

    @Test
    void mistakesAreRefusedNamingLineAndKey() {
        String typo = refused(GUIDE.replace("batch_size: 256", "batchsize: 256"));
        assertTrue(typo.contains("line " + lineOf("batch_size: 256")) && typo.contains("unknown key training.batchsize")
                && typo.contains("batch_size"), typo);
        String negative = refused(GUIDE.replace("batch_size: 256", "batch_size: -4"));
        assertTrue(negative.contains("line " + lineOf("batch_size: 256") + ": training.batch_size: expected a whole number >= 1, found '-4'"), negative);
        String text = refused(GUIDE.replace("n_layers: 8", "n_layers: eight"));
        assertTrue(text.contains("line " + lineOf("n_layers: 8") + ": model.n_layers") && text.contains("'eight'"), text);
        String precision = refused(GUIDE.replace("bf16-mixed", "16-mixed"));
        assertTrue(precision.contains("line " + lineOf("precision:") + ": training.precision: expected one of 32-true, 32, bf16-mixed")
                && precision.contains("float16 is not supported"), precision);
        String section = refused(GUIDE.replace("""
                  sampling:
                    strategy: weighted
                    label_key: cell_type
                    curriculum_warmup_epochs: 3
                """, "  sampling: weighted\n"));
        assertTrue(section.contains("training.sampling is a section"), section);
        String heads = refused(GUIDE.replace("n_heads: 8", "n_heads: 6"));
        assertTrue(heads.contains("model.d_model (512) must be a multiple of model.n_heads (6)"), heads);
        String unknownSection = refused(GUIDE + "optimizer:\n  lr: 0.1\n");
        assertTrue(unknownSection.contains("line " + (GUIDE.lines().count() + 1) + ": unknown key optimizer") && unknownSection.contains("data, training, model, tokenizer"), unknownSection);
        String duplicate = refused(GUIDE.replace("num_epochs: 10", "num_epochs: 10\n  num_epochs: 3"));
        int epochs = lineOf("num_epochs: 10");
        assertTrue(duplicate.contains("line " + (epochs + 1) + ": training.num_epochs is given twice (first on line " + epochs + ")"), duplicate);
        String bucket = refused(GUIDE.replace("source: local", "source: s3"));
        assertTrue(bucket.contains("must be an address s3://bucket/folder"), bucket);
        String override = refused(GUIDE, "training.batch=3");
        assertTrue(override.contains("--set training.batch=3: unknown key training.batch"), override);
        String overrideValue = refused(GUIDE, "training.pin_memory=maybe");
        assertTrue(overrideValue.contains("--set training.pin_memory=maybe: training.pin_memory: expected true or false"), overrideValue);
        assertTrue(refused(GUIDE, "training.batch_size").contains("expected key=value"));
        String notYaml = refused(GUIDE, "training.batch_size=[");
        assertTrue(notYaml.contains("--set training.batch_size=[: training.batch_size: not a YAML value"), notYaml);
        String dotted = refused(GUIDE + "training.batch_size: 64\n");
        assertTrue(dotted.contains("training.batch_size: write keys nested under their section"), dotted);
        String none = refused(GUIDE.replace("shard_dir: ./atlas_shards/", "shard_dir:"));
        assertTrue(none.contains("data.shards.shard_dir: expected a text, found no value"), none);
        String home = refused(GUIDE.replace("./runs/atlas", "~/runs"));
        assertTrue(home.contains("a home folder is not expanded"), home);
    }
}
