package dev.memfit.memory;

import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The transformer's memory estimate and the advice built on it. */
class TransformerMemoryTest {

    /** The seed's model: d_model 512, 8 layers, 8 heads, 2,048 tokens, the 2,048 most expressed genes. */
    private static final TransformerShape SEED = new TransformerShape(2_050, 2_048, 512, 8, 8, 10, 0.15);

    @Test
    void activationsGrowWithTheBatchAndTheScoresWithTheSquareOfTheTokens() {
        long one = MemoryEstimator.transformerBytes(SEED, 1, 4);
        long two = MemoryEstimator.transformerBytes(SEED, 2, 4);
        long perCell = two - one;
        assertEquals(4 * (SEED.scoreValuesPerCell() + SEED.otherActivationValuesPerCell() + SEED.backwardValuesPerCell())
                + SEED.maxLength() * 20, perCell, "one more cell adds its activations, gradients and tokens");
        TransformerShape half = new TransformerShape(2_050, 1_024, 512, 8, 8, 10, 0.15);
        assertEquals(4.0, SEED.scoreValuesPerCell() / (double) half.scoreValuesPerCell(), 1e-12, "scores: tokens squared");
        assertEquals(8L * 4 * 8 * 2_048 * 2_048, SEED.scoreValuesPerCell(), "4 copies x heads x tokens² x layers");
    }

    @Test
    void bf16MixedHalvesTheActivationsAndKeepsFloat32MasterWeights() {
        MemoryEstimate fp32 = MemoryEstimator.builder().setTransformer(SEED).optBatchSize(8).optPrecision(4).build().estimate();
        MemoryEstimate bf16 = MemoryEstimator.builder().setTransformer(SEED).optBatchSize(8).optPrecision(2).build().estimate();
        long p = SEED.parameters();
        assertEquals(component(fp32, "attention scores") / 2, component(bf16, "attention scores"));
        assertEquals(component(fp32, "other activations") / 2, component(bf16, "other activations"));
        assertEquals(4 * p, component(bf16, "parameters"), "float32 masters");
        assertEquals(2 * p, component(bf16, "bfloat16 casts"), "and their bfloat16 casts");
        assertEquals(8 * p, component(bf16, "adam state"));
        assertTrue(bf16.total(MemoryEstimate.Where.DEVICE) < 0.6 * fp32.total(MemoryEstimate.Where.DEVICE),
                "activations dominate at batch 8 x 2,048 tokens");
    }

    @Test
    void adviceKeepsTheCellsAStepWhenItShrinksTheBatch() {
        long need = MemoryEstimator.transformerBytes(SEED, 256, 4);
        assertTrue(Advice.transformer(SEED, 256, 2, 4, 2 * need, false).endsWith("it fits."));
        long room = MemoryEstimator.transformerBytes(SEED, 32, 4) + (1L << 20);
        String text = Advice.transformer(SEED, 256, 2, 4, (long) (room / Advice.DEVICE_SHARE) + 1, false);
        assertTrue(text.contains("does not fit"), text);
        assertTrue(text.contains("training.batch_size=32 with training.accumulate_grad_batches=16"), text);
        assertTrue(text.contains("the same 512 cells a step"), text);
        assertTrue(text.contains("tokenizer.max_length="), text);
        assertTrue(text.contains("this engine cannot train in bfloat16"), text);
        String hopeless = Advice.transformer(SEED, 256, 1, 4, 1L << 20, true);
        assertTrue(hopeless.contains("Even one cell does not fit"), hopeless);
    }

    @Test
    void aShapeThatCannotBeBuiltIsRefused() {
        assertThrows(MemfitException.class, () -> new TransformerShape(2_050, 2_048, 500, 8, 8, 10, 0.15),
                "d_model not a multiple of the heads");
        assertThrows(MemfitException.class, () -> new TransformerShape(2_050, 0, 512, 8, 8, 10, 0.15));
    }

    private static long component(MemoryEstimate estimate, String prefix) {
        return estimate.components().stream().filter(c -> c.name().startsWith(prefix)).mapToLong(MemoryEstimate.Component::bytes)
                .reduce((a, b) -> {
                    throw new AssertionError("two components start with " + prefix);
                }).orElseThrow(() -> new AssertionError("no component starts with " + prefix));
    }
}
