package dev.memfit.train;

import ai.djl.Device;
import ai.djl.engine.Engine;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.source.ArraySource;
import dev.memfit.synthetic.SyntheticParticles;
import dev.memfit.synthetic.SyntheticTopics;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Each trainer on {@code gpu(0)} against the CPU, same seed, same batches: the epoch losses agree within float
 * tolerance. Runs only where DJL sees a GPU (./memfit gpu-setup); reported as skipped elsewhere. Kept small: a few
 * epochs of the unit tests' data sets.
 */
class GpuTrainingTest {

    /** Relative difference allowed per epoch: float32 sums in another order, amplified over a few epochs of training. */
    private static final double TOLERANCE = 1e-3;

    @BeforeEach
    void needsAGpu() {   // per test, not @BeforeAll: Surefire then reports each test as skipped
        assumeTrue(Engine.getInstance().getGpuCount() > 0, "no GPU visible to DJL (./memfit gpu-setup points it at one)");
    }

    @Test
    void topicModelLossesOnTheGpuEqualTheCpus() {
        try (SyntheticTopics.Corpus corpus = SyntheticTopics.builder().setDocuments(1_000).setTerms(300).setTopics(4)
                .setDocumentLength(500).optSeed(11).generate()) {
            compare("topic model", device -> {
                try (TopicModel model = TopicModel.builder().setTopics(4).optEpochs(4).optLearningRate(0.05).optSeed(3)
                             .optDevice(device).build();
                     Loader loader = Datasets.of(corpus.counts()).optBatchSize(64).optShuffle(5).build()) {
                    return model.fit(loader).losses();
                }
            });
        }
    }

    @Test
    void imageVaeLossesOnTheGpuEqualTheCpus(@TempDir Path dir) {
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(300).setSize(24)
                .optPerStack(100).optNoise(0.4).optMaxAngle(30).optSeed(11).write(dir);
        compare("image VAE", device -> {
            try (ImageVae vae = ImageVae.builder().optEpochs(3).optHidden(64).optSeed(4).optDevice(device).build();
                 Loader loader = Datasets.particles(written.star()).eager().optBatchSize(32).optShuffle(2).build()) {
                return vae.fit(loader).losses();
            }
        });
    }

    @Test
    void cellClassifierLossesOnTheGpuEqualTheCpus() {
        int[] labels = new int[2_000];
        try (ArraySource counts = CellClassifierTest.atlas(labels, 30)) {
            compare("cell classifier", device -> {
                try (CellClassifier classifier = CellClassifier.builder().setClasses(3).setLabels(labels).optHidden(32)
                             .optEpochs(3).optLearningRate(0.01).optSeed(7).optDevice(device).build();
                     Loader loader = Datasets.of(counts).optBatchSize(64).optShuffle(4).build()) {
                    return classifier.fit(loader).losses();
                }
            });
        }
    }

    private static void compare(String trainer, Function<Device, double[]> fit) {
        double[] cpu = fit.apply(Device.cpu());
        double[] gpu = fit.apply(Device.gpu(0));
        System.out.printf("%s losses: cpu %s%n%s losses: gpu %s%n", trainer, Arrays.toString(cpu), trainer, Arrays.toString(gpu));
        assertEquals(cpu.length, gpu.length);
        for (int e = 0; e < cpu.length; e++) {
            assertEquals(cpu[e], gpu[e], TOLERANCE * Math.abs(cpu[e]), trainer + ", epoch " + (e + 1) + ": cpu "
                    + Arrays.toString(cpu) + ", gpu " + Arrays.toString(gpu));
        }
    }
}
