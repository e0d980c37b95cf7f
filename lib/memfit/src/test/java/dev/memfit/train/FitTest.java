package dev.memfit.train;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.ProgressListener;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.source.ArraySource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The training loop on its own, with a one-weight model whose gradient is the sum of the values it saw, and the
 * loop as the three trainers wire it.
 */
class FitTest {

    /** Ten samples of one value each, 1 to 10: batches of 3 are {1,2,3} {4,5,6} {7,8,9} {10}. */
    private static ArraySource values;

    @BeforeAll
    static void create() {
        values = ArraySource.allocate("1 to 10", 10, new Shape(1), DType.FLOAT32);
        for (int i = 0; i < 10; i++) {
            values.data().setAtIndex(ValueLayout.JAVA_FLOAT, i, i + 1f);
        }
    }

    @AfterAll
    static void free() {
        values.close();
    }

    /** A model with one weight w = 1 and loss w * sum(batch): the gradient of a step is the sum of its values. */
    private static final class Summing implements Fit.Model {
        final NDArray weight;
        final List<Long> loaderEpochs = new ArrayList<>();
        final List<String> steps = new ArrayList<>();
        final List<NDArray> batchArrays = new ArrayList<>();
        final List<NDArray> stepArrays = new ArrayList<>();
        int failAt = -1;

        Summing(NDManager parameters) {
            weight = parameters.create(1f);
            weight.setRequiresGradient(true);
        }

        @Override
        public double backward(Batch batch, Fit.Step step) {
            if (loaderEpochs.size() == failAt) {
                throw new IllegalStateException("batch " + failAt + " fails");
            }
            loaderEpochs.add(batch.epoch());
            NDArray x = batch.toNDArray(step.batchScope());
            batchArrays.add(x);
            stepArrays.add(step.scope().create(batch.size()));
            NDArray loss = x.sum().mul(weight);
            step.backward(loss);
            return loss.getFloat();
        }

        @Override
        public void update(Fit.Step step) {
            assertTrue(batchArrays.getLast().isReleased(), "a batch's arrays are freed once its backward pass is done");
            assertFalse(stepArrays.getLast().isReleased(), "the step's arrays live until the update");
            NDArray gradient = weight.getGradient();
            gradient.attach(step.scope());
            steps.add(step.batches() + " batches, " + step.samples() + " samples, gradient " + gradient.getFloat());
            gradient.subi(gradient);     // what DJL's optimizers do after an update
        }
    }

    private static final class Settings extends TrainerBuilder<Settings> {
        Settings(int epochs) {
            super(epochs, 0.1f);
            optDevice(Device.cpu()).optProgress(ProgressListener.silent());
        }

        @Override
        protected Settings self() {
            return this;
        }
    }

    /** Records what a listener is told. */
    private static final class Recording implements ProgressListener {
        final List<String> started = new ArrayList<>();
        final List<String> messages = new ArrayList<>();
        long steps;
        int closed;

        @Override
        public Task start(String task, long total, String unit) {
            started.add(task + ", " + total + " " + unit);
            return new Task() {
                @Override
                public void step(long count) {
                    steps += count;
                }

                @Override
                public void message(String message) {
                    messages.add(message);
                }

                @Override
                public void close() {
                    closed++;
                }
            };
        }
    }

    private static FitResult run(Settings settings, Function<NDManager, Summing> model, List<Summing> made) {
        try (NDManager parameters = Fit.engine().newBaseManager(Device.cpu());
             Loader loader = Datasets.of(values).optBatchSize(3).build()) {
            Summing summing = model.apply(parameters);
            made.add(summing);
            return new Fit("Summing", settings).run(loader, parameters, summing);
        }
    }

    @Test
    void accumulatesTheGradientsOfAGroupAndStepsOnceForIt() {
        List<EpochStats> seen = new ArrayList<>();
        List<Summing> made = new ArrayList<>();
        FitResult fit = run(new Settings(3).optGradientAccumulation(3).optEpochListener(seen::add), Summing::new, made);
        Summing model = made.getFirst();
        // 4 batches in groups of 3: a full step of 1+...+9 and a short last one of 10, every epoch
        assertEquals(List.of("3 batches, 9 samples, gradient 45.0", "1 batches, 1 samples, gradient 10.0"),
                model.steps.subList(0, 2));
        assertEquals(model.steps.subList(0, 2), model.steps.subList(4, 6));
        // epochs counted from 1 for people; the loader's epoch numbers, which fix its shuffle, from 0
        assertEquals(List.of(1, 2, 3), seen.stream().map(EpochStats::epoch).toList());
        assertEquals(List.of(0L, 0L, 0L, 0L, 1L, 1L, 1L, 1L, 2L, 2L, 2L, 2L), model.loaderEpochs);
        assertEquals(fit.history(), seen, "the listener sees each epoch once, as the result records it");
        for (EpochStats stats : fit.history()) {
            assertEquals(5.5, stats.loss(), 1e-9, "mean loss per sample: 55 / 10");
            assertEquals(4, stats.batches());
            assertEquals(2, stats.steps());
            assertEquals(10, stats.samples());
            assertTrue(stats.seconds() > 0);
        }
        assertEquals(3, fit.epochs());
        assertArrayEquals(new double[]{5.5, 5.5, 5.5}, fit.losses(), 1e-9);
        assertEquals(30, fit.samples());
        assertEquals(6, fit.steps());
        assertEquals(Device.cpu(), fit.device());
        double epochSeconds = java.util.Arrays.stream(fit.epochSeconds()).sum();
        assertTrue(fit.seconds() >= epochSeconds && fit.seconds() < epochSeconds + 1, fit.seconds() + " s for epochs of " + epochSeconds);
        assertEquals(30 / fit.seconds(), fit.samplesPerSecond(), 1e-9);
    }

    @Test
    void withoutAccumulationEveryBatchSteps() {
        List<Summing> made = new ArrayList<>();
        FitResult fit = run(new Settings(1), Summing::new, made);
        assertEquals(List.of("1 batches, 3 samples, gradient 6.0", "1 batches, 3 samples, gradient 15.0",
                "1 batches, 3 samples, gradient 24.0", "1 batches, 1 samples, gradient 10.0"), made.getFirst().steps);
        assertEquals(4, fit.steps());
    }

    @Test
    void progressCountsEveryBatchOfEveryEpoch() {
        Recording progress = new Recording();
        run(new Settings(3).optGradientAccumulation(2).optProgress(progress), Summing::new, new ArrayList<>());
        assertEquals(List.of("Summing, 12 batches"), progress.started, "3 epochs of 4 batches");
        assertEquals(12, progress.steps);
        // each epoch's loss, then its rate and the memory held
        assertEquals(3, progress.messages.size(), progress.messages::toString);
        for (int e = 0; e < 3; e++) {
            assertTrue(progress.messages.get(e).matches("epoch " + (e + 1) + " loss 5\\.500 · [0-9.,kM]+ samples/s · RSS "
                    + "[0-9.]+ [KMG]iB"), progress.messages.get(e));
        }
        assertEquals(1, progress.closed);
    }

    @Test
    void stopWhenEndsTrainingAfterTheEpochThatMeetsIt() {
        List<Integer> seen = new ArrayList<>();
        Recording progress = new Recording();
        FitResult fit = run(new Settings(10).optProgress(progress).optEpochListener(stats -> seen.add(stats.epoch()))
                .optStopWhen(stats -> stats.epoch() == 2), Summing::new, new ArrayList<>());
        assertEquals(2, fit.epochs());
        assertEquals(List.of(1, 2), seen);
        assertEquals(8, progress.steps);
        assertEquals(1, progress.closed);
    }

    @Test
    void aFailingBatchEndsItsStepAndTheFit() {
        Recording progress = new Recording();
        List<Summing> made = new ArrayList<>();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> run(
                new Settings(2).optGradientAccumulation(3).optProgress(progress), parameters -> {
                    Summing failing = new Summing(parameters);
                    failing.failAt = 5;
                    return failing;
                }, made));
        assertEquals("batch 5 fails", e.getMessage());
        assertEquals(1, progress.closed);
        assertTrue(made.getFirst().stepArrays.getLast().isReleased(), "the unfinished step's arrays are freed");
        // DJL allows one gradient collector at a time: the failed step's was closed, or this would throw
        FitResult next = run(new Settings(1), Summing::new, made);
        assertEquals(4, next.steps());
    }

    @Test
    void theBuilderRefusesBadSharedSettings() {
        IllegalArgumentException epochs = assertThrows(IllegalArgumentException.class,
                () -> TopicModel.builder().setTopics(2).optEpochs(0).build());
        assertTrue(epochs.getMessage().contains("optEpochs"), epochs.getMessage());
        IllegalArgumentException accumulation = assertThrows(IllegalArgumentException.class,
                () -> ImageVae.builder().optGradientAccumulation(0).build());
        assertTrue(accumulation.getMessage().contains("optGradientAccumulation"), accumulation.getMessage());
        IllegalArgumentException rate = assertThrows(IllegalArgumentException.class,
                () -> CellClassifier.builder().setClasses(2).setLabels(new int[1]).optLearningRate(0).build());
        assertTrue(rate.getMessage().contains("optLearningRate"), rate.getMessage());
        assertThrows(NullPointerException.class, () -> ImageVae.builder().optProgress(null));
    }

    /**
     * Each trainer runs the loop: progress under its own name, epochs from 1 to its listener, one result; it closes
     * idempotently and refuses work afterwards.
     */
    @Test
    void everyTrainerRunsTheLoopAndClosesOnce() {
        ArraySource counts = ArraySource.allocate("counts", 40, new Shape(16), DType.FLOAT32);
        int[] labels = new int[40];
        for (int i = 0; i < 40 * 16; i++) {
            counts.data().setAtIndex(ValueLayout.JAVA_FLOAT, i, (i * 7919) % 5);
            labels[i / 16] = (i / 16) % 2;
        }
        try (counts; Loader loader = Datasets.of(counts).optBatchSize(8).build()) {
            List<Trainer> trainers = new ArrayList<>();
            List<Recording> progress = new ArrayList<>();
            List<List<Integer>> epochs = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                Recording recording = new Recording();
                List<Integer> seen = new ArrayList<>();
                progress.add(recording);
                epochs.add(seen);
                EpochListener listener = stats -> seen.add(stats.epoch());
                trainers.add(switch (t) {
                    case 0 -> TopicModel.builder().setTopics(2).optEpochs(2).optProgress(recording).optEpochListener(listener)
                            .optGradientAccumulation(2).build();
                    case 1 -> ImageVae.builder().optHidden(8).optEpochs(2).optProgress(recording).optEpochListener(listener)
                            .optGradientAccumulation(2).build();
                    default -> CellClassifier.builder().setClasses(2).setLabels(labels).optHidden(8).optEpochs(2)
                            .optProgress(recording).optEpochListener(listener).optGradientAccumulation(2).build();
                });
            }
            List<String> names = List.of("Topic model", "Image VAE", "Cell classifier");
            for (int t = 0; t < 3; t++) {
                Trainer trainer = trainers.get(t);
                FitResult fit = trainer.fit(loader);
                assertEquals(List.of(names.get(t) + ", 10 batches"), progress.get(t).started);
                assertEquals(10, progress.get(t).steps);
                assertEquals(List.of(1, 2), epochs.get(t));
                assertEquals(80, fit.samples());
                assertEquals(6, fit.steps(), "5 batches in groups of 2, twice");
                trainer.close();
                trainer.close();
                IllegalStateException closed = assertThrows(IllegalStateException.class, () -> trainer.fit(loader));
                assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            }
        }
    }

    @Test
    void theTopicModelKeepsItsResultsUntilTheNextFitOrClose() {
        try (TopicModel model = TopicModel.builder().setTopics(2).optEpochs(1).optProgress(ProgressListener.silent()).build();
             Loader loader = Datasets.of(values).optBatchSize(5).build()) {
            IllegalStateException early = assertThrows(IllegalStateException.class, model::topicTerms);
            assertTrue(early.getMessage().contains("fit the topic model"), early.getMessage());
            model.fit(loader);
            ArraySource first = model.documentTopics();
            assertEquals(10, first.size());
            float[] row = model.documentTopics(9);
            assertEquals(1.0, row[0] + row[1], 1e-6);
            assertArrayEquals(row, model.documentTopics(9), "the same proportions until the next fit");
            model.fit(loader);
            assertThrows(IllegalStateException.class, () -> first.data().get(ValueLayout.JAVA_FLOAT, 0),
                    "the first fit's L was freed");
            assertTrue(model.documentTopics() != first);
            assertSame(model.documentTopics(), model.documentTopics());
            model.close();
            assertThrows(IllegalStateException.class, model::documentTopics);
        }
    }
}
