package dev.memfit.train;

import ai.djl.Device;
import ai.djl.engine.Engine;
import dev.memfit.ProgressListener;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.synthetic.SyntheticTopics;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A topic-model checkpoint written on {@code gpu(0)}: resumed on the GPU, the run ends exactly (bit for bit) as the
 * uninterrupted GPU run; resumed on the CPU, the steps before the checkpoint are the GPU's own and every later epoch's
 * loss is the GPU run's within float tolerance (another device sums in another order). Runs only where DJL sees a GPU.
 */
class GpuCheckpointTest {

    private static final double TOLERANCE = 1e-3;
    private static SyntheticTopics.Corpus corpus;

    @BeforeAll
    static void generate() {
        corpus = SyntheticTopics.builder().setDocuments(300).setTerms(60).setTopics(3).setDocumentLength(200)
                .optSeed(11).generate();
    }

    @AfterAll
    static void free() {
        corpus.close();
    }

    @BeforeEach
    void needsAGpu() {
        assumeTrue(Engine.getInstance().getGpuCount() > 0, "no GPU visible to DJL (./memfit gpu-setup points it at one)");
    }

    private record Run(FitResult fit, float[][] topicTerms, float[] firstDocument) {
    }

    private static TopicModel.Builder topics(Device device) {
        return TopicModel.builder().setTopics(3).optEpochs(4).optLearningRate(0.05).optSeed(3).optDevice(device)
                .optProgress(ProgressListener.silent());
    }

    private static Run fit(TopicModel.Builder builder) {
        try (TopicModel model = builder.build();
             Loader loader = Datasets.of(corpus.counts()).optBatchSize(32).optShuffle(5).build()) {
            FitResult fit = model.fit(loader);
            return new Run(fit, model.topicTerms(), model.documentTopics(0));
        }
    }

    @Test
    void aGpuCheckpointResumesBitForBitOnTheGpuAndWithinToleranceOnTheCpu(@TempDir Path dir) {
        Device gpu = Device.gpu(0);
        Run straight = fit(topics(gpu));
        assertEquals(gpu, straight.fit().device());
        assertEquals(40, straight.fit().stepLosses().length, "300 documents in batches of 32, 4 epochs");

        Path onGpu = dir.resolve("gpu");
        assertThrows(CheckpointTest.Crash.class, () -> fit(topics(gpu).optCheckpoints(Checkpoints.builder().setFolder(onGpu).optEverySteps(5).build())
                .optProgress(CheckpointTest.crashAt(17))));
        Run resumed = fit(topics(gpu).optCheckpoints(Checkpoints.builder().setFolder(onGpu).optEverySteps(5).build()));
        assertEquals(15, resumed.fit().checkpoints().resumedAtStep());
        assertArrayEquals(straight.fit().stepLosses(), resumed.fit().stepLosses(), 0.0, "loss of every step, on the GPU");
        for (int t = 0; t < straight.topicTerms().length; t++) {
            assertArrayEquals(straight.topicTerms()[t], resumed.topicTerms()[t], 0f, "topic " + t + ", on the GPU");
        }
        assertArrayEquals(straight.firstDocument(), resumed.firstDocument(), 0f, "document 0's topics, on the GPU");

        Path fromGpu = dir.resolve("gpu-then-cpu");
        assertThrows(CheckpointTest.Crash.class, () -> fit(topics(gpu).optCheckpoints(Checkpoints.builder().setFolder(fromGpu).optEverySteps(5).build())
                .optProgress(CheckpointTest.crashAt(17))));
        Run onCpu = fit(topics(Device.cpu()).optCheckpoints(Checkpoints.builder().setFolder(fromGpu).optEverySteps(5).build()));
        assertEquals(Device.cpu(), onCpu.fit().device());
        assertEquals(15, onCpu.fit().checkpoints().resumedAtStep());
        double[] gpuSteps = straight.fit().stepLosses();
        double[] cpuSteps = onCpu.fit().stepLosses();
        assertArrayEquals(Arrays.copyOf(gpuSteps, 15), Arrays.copyOf(cpuSteps, 15), 0.0,
                "the 15 steps before the checkpoint are the GPU run's own");
        // the first step after the checkpoint starts from the GPU's exact state: only the CPU's summation order differs
        assertEquals(gpuSteps[15], cpuSteps[15], 1e-5 * Math.abs(gpuSteps[15]), "step 16, the first on the CPU");
        double[] gpuEpochs = straight.fit().losses();
        double[] cpuEpochs = onCpu.fit().losses();
        System.out.printf("epoch losses: gpu %s, gpu checkpoint resumed on the cpu %s%n", Arrays.toString(gpuEpochs),
                Arrays.toString(cpuEpochs));
        for (int e = 0; e < gpuEpochs.length; e++) {
            assertEquals(gpuEpochs[e], cpuEpochs[e], TOLERANCE * Math.abs(gpuEpochs[e]), "epoch " + (e + 1));
        }
    }
}
