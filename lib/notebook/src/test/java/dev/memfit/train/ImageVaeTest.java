package dev.memfit.train;

import dev.memfit.eval.LatentSpace;
import dev.memfit.synthetic.SyntheticParticles;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ImageVaeTest {

    @Test
    void anExtremeLogVarianceCannotOverflowTheLoss() {
        try (ai.djl.ndarray.NDManager manager = ai.djl.ndarray.NDManager.newBaseManager()) {
            ai.djl.ndarray.NDArray mean = manager.create(new float[][]{{0.5f, -0.5f}, {0f, 0f}});
            ai.djl.ndarray.NDArray extreme = manager.create(new float[][]{{200f, -300f}, {0f, 0f}});
            float unbounded = ImageVae.klPerImage(mean, extreme, manager).getFloat(0);
            assertTrue(Float.isInfinite(unbounded), "exp(200) overflows float32: " + unbounded);
            ai.djl.ndarray.NDArray bounded = ImageVae.boundedLogVariance(extreme);
            assertArrayEquals(new float[]{10f, -10f, 0f, 0f}, bounded.toFloatArray(), 0f);
            float[] kl = ImageVae.klPerImage(mean, bounded, manager).toFloatArray();
            // -0.5 * sum(1 + lv - m^2 - exp(lv)) for lv = (10, -10), m = (0.5, -0.5)
            double expected = -0.5 * ((1 + 10 - 0.25 - Math.exp(10)) + (1 - 10 - 0.25 - Math.exp(-10)));
            assertEquals(expected, kl[0], Math.abs(expected) * 1e-5);
            assertEquals(0f, kl[1], 1e-6f, "N(0, 1) against N(0, 1): no divergence");
        }
    }

    @Test
    void latentSeparatesTheConformationsAndEagerEqualsLazy(@TempDir Path dir) {
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(600).setSize(24)
                .optPerStack(200).optNoise(0.4).optMaxAngle(30).optSeed(11).write(dir);
        double[] eagerLosses;
        double separability;
        try (ImageVae vae = ImageVae.builder().optEpochs(8).optHidden(128).optSeed(4).build();
             Loader train = Datasets.particles(written.star()).eager().optBatchSize(32).optShuffle(2).build();
             Loader inOrder = Datasets.particles(written.star()).lazy(4).optBatchSize(100).build()) {
            eagerLosses = vae.fit(train).losses();
            assertTrue(eagerLosses[7] < eagerLosses[0] * 0.8, "loss " + eagerLosses[0] + " -> " + eagerLosses[7]);
            float[][] z = vae.embed(inOrder);
            assertEquals(600, z.length);
            assertEquals(8, z[0].length);
            separability = LatentSpace.linearSeparability(z, written.conformations());
            double[][] plane = LatentSpace.pca(z, 2);
            assertEquals(2, plane[0].length);
        }
        // Alone and in the full suite this fit is bit-reproducible (losses 330.105... -> 183.531...). It failed once in
        // ~17 CI runs with 0.843: the losses in the message tell whether training took another path (then a
        // nondeterministic kernel) or the embedding was wrong (then the loader or memory reuse).
        assertTrue(separability > 0.9, "conformations separable in the latent space: " + separability
                + "; epoch losses " + java.util.Arrays.toString(eagerLosses));
        try (ImageVae vae = ImageVae.builder().optEpochs(8).optHidden(128).optSeed(4).build();
             Loader train = Datasets.particles(written.star()).lazy(3).optBatchSize(32).optShuffle(2).build()) {
            double[] lazyLosses = vae.fit(train).losses();
            // Same data (ParticleSourcesTest checks the batches byte for byte), same batches, same seed. Alone in a
            // JVM the two fits agree to the last digit; in the full suite (other native libraries loaded, ND4J's
            // OpenMP among them) CPU kernels are not bit-reproducible and training amplifies the differences, so
            // the curves are only required to stay close.
            for (int e = 0; e < eagerLosses.length; e++) {
                assertEquals(eagerLosses[e], lazyLosses[e], 0.05 * eagerLosses[e], "epoch " + e);
            }
        }
    }

    @Test
    void accumulationStepsOncePerGroup(@TempDir Path dir) {
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(100).setSize(12)
                .optPerStack(100).optNoise(0.1).optMaxAngle(30).optSeed(2).write(dir);
        try (ImageVae vae = ImageVae.builder().optEpochs(2).optHidden(16).optGradientAccumulation(3).build();
             Loader loader = Datasets.particles(written.star()).eager().optBatchSize(10).build()) {
            List<EpochStats> history = vae.fit(loader).history();
            assertEquals(10, history.getFirst().batches());
            assertEquals(4, history.getFirst().steps(), "10 batches in groups of 3: 4 optimizer steps");
            assertEquals(100, history.getFirst().samples());
            assertTrue(history.get(1).loss() < history.get(0).loss());
        }
    }

    /**
     * 3 micro-batches of 10 accumulate to one step of 30, the short last group (one batch of 10) included: the same
     * losses and the same latent means as batches of 30. The noise of the latent samples is drawn in the same order
     * both ways (10 x 8 values per micro-batch, 30 x 8 per batch: torch fills normals in blocks of 16).
     */
    @Test
    void accumulationEqualsTheLargeBatch(@TempDir Path dir) {
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(100).setSize(12)
                .optPerStack(100).optNoise(0.1).optMaxAngle(30).optSeed(2).write(dir);
        double[] largeLosses;
        float[][] largeLatent;
        try (ImageVae vae = ImageVae.builder().optEpochs(3).optHidden(16).optSeed(7).build();
             Loader loader = Datasets.particles(written.star()).eager().optBatchSize(30).optShuffle(3).build()) {
            FitResult fit = vae.fit(loader);
            assertEquals(12, fit.steps(), "4 steps in each of 3 epochs");
            largeLosses = fit.losses();
            largeLatent = vae.embed(loader);
        }
        try (ImageVae vae = ImageVae.builder().optEpochs(3).optHidden(16).optSeed(7).optGradientAccumulation(3).build();
             Loader loader = Datasets.particles(written.star()).eager().optBatchSize(10).optShuffle(3).build()) {
            FitResult fit = vae.fit(loader);
            assertEquals(12, fit.steps(), "4 steps in each of 3 epochs");
            assertArrayEquals(largeLosses, fit.losses(), 1e-5 * largeLosses[0]);
            assertLatentClose(largeLatent, vae.embed(loader), 1e-4);
        }
        // without accumulation, batches of 10 take three times as many steps: a different curve
        try (ImageVae vae = ImageVae.builder().optEpochs(3).optHidden(16).optSeed(7).build();
             Loader loader = Datasets.particles(written.star()).eager().optBatchSize(10).optShuffle(3).build()) {
            double[] small = vae.fit(loader).losses();
            assertTrue(Math.abs(small[2] - largeLosses[2]) > 1e-3 * largeLosses[2], small[2] + " vs " + largeLosses[2]);
        }
    }

    private static void assertLatentClose(float[][] expected, float[][] actual, double tolerance) {
        assertEquals(expected.length, actual.length);
        double largest = 0;
        for (int i = 0; i < expected.length; i++) {
            for (int j = 0; j < expected[i].length; j++) {
                largest = Math.max(largest, Math.abs(expected[i][j] - actual[i][j]));
            }
        }
        assertTrue(largest < tolerance, "largest difference of the latent means " + largest);
    }

    @Test
    void separabilityIsChanceForShuffledLabels() {
        float[][] points = new float[200][3];
        byte[] labels = new byte[200];
        java.util.SplittableRandom random = new java.util.SplittableRandom(1);
        for (int i = 0; i < points.length; i++) {
            for (int j = 0; j < 3; j++) {
                points[i][j] = (float) random.nextGaussian();
            }
            labels[i] = (byte) random.nextInt(2);
        }
        double chance = LatentSpace.linearSeparability(points, labels);
        assertTrue(chance < 0.65, "random labels: " + chance);
        for (int i = 0; i < points.length; i++) {
            points[i][1] += labels[i] * 6;
        }
        assertTrue(LatentSpace.linearSeparability(points, labels) > 0.97);
    }
}
