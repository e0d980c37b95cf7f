package dev.memfit.train;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.sample.WeightedSampler;
import dev.memfit.source.ArraySource;
import dev.memfit.synthetic.SyntheticParticles;
import dev.memfit.synthetic.SyntheticTopics;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Checkpoints of the three trainers, in one process: a fit that crashes at a batch and is run again (a new model
 * and a new loader, as a restarted process would build them) ends exactly where the uninterrupted fit ends, with the
 * same loss at every step; corrupt and torn checkpoints are passed over; other settings are refused by name; the
 * files read in h5py. {@code CheckpointKillTest} kills a real child JVM with SIGKILL.
 */
class CheckpointTest {

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

    /** Thrown by {@link #crashAt}: stands for a process that died at that batch. */
    static final class Crash extends RuntimeException {
        Crash(long batch) {
            super("simulated crash after batch " + batch);
        }
    }

    /** A progress listener that throws after the given number of batches of the fit (resumed ones included). */
    static ProgressListener crashAt(long batch) {
        return (task, total, unit) -> new ProgressListener.Task() {
            long done;

            @Override
            public void step(long steps) {
                done += steps;
                if (done >= batch) {
                    throw new Crash(batch);
                }
            }
        };
    }

    private static TopicModel.Builder topics(boolean sparse) {
        return TopicModel.builder().setTopics(3).optEpochs(4).optLearningRate(0.05).optSeed(3)
                .optSparseDocumentUpdates(sparse).optProgress(ProgressListener.silent());
    }

    private static Loader documents(int batchSize) {
        return Datasets.of(corpus.counts()).optBatchSize(batchSize).optShuffle(5).build();
    }

    /** 300 documents in batches of 32: 10 batches an epoch (the last of 12), 40 steps in 4 epochs. */
    private record TopicRun(FitResult fit, float[][] topicTerms, float[] firstDocument) {
    }

    private static TopicRun fitTopics(TopicModel.Builder builder) {
        try (TopicModel model = builder.build(); Loader loader = documents(32)) {
            FitResult fit = model.fit(loader);
            return new TopicRun(fit, model.topicTerms(), model.documentTopics(0));
        }
    }

    private static void assertSameRun(TopicRun expected, TopicRun actual) {
        assertArrayEquals(expected.fit().stepLosses(), actual.fit().stepLosses(), 0.0, "loss of every step");
        assertArrayEquals(expected.fit().losses(), actual.fit().losses(), 0.0, "loss of every epoch");
        for (int t = 0; t < expected.topicTerms().length; t++) {
            assertArrayEquals(expected.topicTerms()[t], actual.topicTerms()[t], 0f, "topic " + t);
        }
        assertArrayEquals(expected.firstDocument(), actual.firstDocument(), 0f, "document 0's topics");
    }

    @Test
    void aTopicModelCrashedTwiceEndsAsTheUninterruptedOne(@TempDir Path dir) {
        for (boolean sparse : new boolean[]{true, false}) {
            Path folder = dir.resolve(sparse ? "sparse" : "dense");
            TopicRun straight = fitTopics(topics(sparse));
            assertEquals(40, straight.fit().stepLosses().length);
            Checkpoints every3 = Checkpoints.builder().setFolder(folder).optEverySteps(3).build();
            Crash first = assertThrows(Crash.class, () -> fitTopics(topics(sparse).optCheckpoints(every3).optProgress(crashAt(17))));
            assertEquals("simulated crash after batch 17", first.getMessage());
            assertEquals(List.of(15L, 12L), steps(folder), "the newest two of steps 3, 6, ..., 15 are kept");
            // the second run resumes at step 15 (epoch 2, batch 5) and dies inside the same epoch again
            assertThrows(Crash.class, () -> fitTopics(topics(sparse).optCheckpoints(every3).optProgress(crashAt(19))));
            assertEquals(List.of(18L, 15L), steps(folder));
            List<String> notes = new ArrayList<>();
            TopicRun resumed = fitTopics(topics(sparse).optCheckpoints(every3).optProgress(noting(notes)));
            assertSameRun(straight, resumed);
            assertEquals(Path.of(folder.resolve("checkpoint-000000000018.h5").toString()),
                    resumed.fit().resumedFrom().orElseThrow());
            assertEquals(18, resumed.fit().checkpoints().resumedAtStep());
            assertEquals(1, notes.size(), notes.toString());
            assertTrue(notes.getFirst().contains("resumed from") && notes.getFirst().contains("epoch 2, batch 8 of 10, step 18"),
                    notes.getFirst());
            assertEquals(List.of(40L, 39L), steps(folder), "steps 21..39 and the final one, the newest two kept");
        }
    }

    @Test
    void aCheckpointAtAnEpochBoundaryResumesWithTheNextEpoch(@TempDir Path dir) {
        TopicRun straight = fitTopics(topics(true));
        // every 10 steps: the checkpoints fall exactly at the ends of epochs 1, 2 and 3
        Checkpoints every10 = Checkpoints.builder().setFolder(dir).optEverySteps(10).optKeep(5).build();
        assertThrows(Crash.class, () -> fitTopics(topics(true).optCheckpoints(every10).optProgress(crashAt(25))));
        assertEquals(List.of(20L, 10L), steps(dir));
        TopicRun resumed = fitTopics(topics(true).optCheckpoints(every10));
        assertSameRun(straight, resumed);
        assertEquals(2, resumed.fit().history().stream().filter(e -> e.epoch() <= 2).count());
    }

    @Test
    void aFinishedRunResumesToItsEndAndTrainsNoFurther(@TempDir Path dir) {
        Checkpoints policy = Checkpoints.builder().setFolder(dir).optEverySteps(100).build();
        TopicRun first = fitTopics(topics(true).optCheckpoints(policy));
        assertEquals(1, first.fit().checkpoints().written(), "only the final checkpoint (100 steps never come)");
        assertTrue(first.fit().resumedFrom().isEmpty());
        TopicRun again = fitTopics(topics(true).optCheckpoints(policy));
        assertSameRun(first, again);
        assertEquals(0, again.fit().checkpoints().written());
        // more epochs continue the finished run rather than starting over
        TopicRun longer = fitTopics(topics(true).optEpochs(5).optCheckpoints(policy));
        TopicRun straightLonger = fitTopics(topics(true).optEpochs(5));
        assertSameRun(straightLonger, longer);
    }

    @Test
    void corruptOrTornCheckpointsArePassedOverForTheOneBefore(@TempDir Path dir) throws IOException {
        TopicRun straight = fitTopics(topics(true));
        Checkpoints policy = Checkpoints.builder().setFolder(dir).optEverySteps(4).optKeep(3).build();
        assertThrows(Crash.class, () -> fitTopics(topics(true).optCheckpoints(policy).optProgress(crashAt(27))));
        assertEquals(List.of(24L, 20L, 16L), steps(dir));
        Path newest = dir.resolve(Checkpoints.fileName(24));
        Path middle = dir.resolve(Checkpoints.fileName(20));
        flipByte(newest, Files.size(newest) / 3);
        try (RandomAccessFile torn = new RandomAccessFile(middle.toFile(), "rw")) {
            torn.setLength(torn.length() / 2);
        }
        InvalidFileException flipped = assertThrows(InvalidFileException.class, () -> Checkpoints.verify(newest));
        assertTrue(flipped.getMessage().contains(newest.getFileName().toString()), flipped.getMessage());
        List<String> notes = new ArrayList<>();
        TopicRun resumed = fitTopics(topics(true).optCheckpoints(policy).optProgress(noting(notes)));
        assertSameRun(straight, resumed);
        assertEquals(16, resumed.fit().checkpoints().resumedAtStep());
        assertEquals(2, resumed.fit().checkpoints().skipped().size(), resumed.fit().checkpoints().skipped().toString());
        assertTrue(notes.getFirst().contains("skipped as corrupt"), notes.getFirst());
        assertTrue(Files.exists(dir.resolve(newest.getFileName() + ".corrupt")), "set aside, not deleted");
        assertTrue(Files.exists(dir.resolve(middle.getFileName() + ".corrupt")));
    }

    @Test
    void otherSettingsOrDataAreRefusedNamingTheDifference(@TempDir Path dir) {
        Checkpoints policy = Checkpoints.builder().setFolder(dir).optEverySteps(5).build();
        assertThrows(Crash.class, () -> fitTopics(topics(true).optCheckpoints(policy).optProgress(crashAt(12))));
        MemfitException rate = assertThrows(MemfitException.class,
                () -> fitTopics(topics(true).optLearningRate(0.1).optCheckpoints(policy)));
        assertTrue(rate.getMessage().contains("learning rate: 0.05 saved, 0.1 now"), rate.getMessage());
        MemfitException seed = assertThrows(MemfitException.class,
                () -> fitTopics(topics(true).optSeed(4).optCheckpoints(policy)));
        assertTrue(seed.getMessage().contains("seed: 3 saved, 4 now"), seed.getMessage());
        MemfitException batch = assertThrows(MemfitException.class, () -> {
            try (TopicModel model = topics(true).optCheckpoints(policy).build(); Loader loader = documents(64)) {
                model.fit(loader);
            }
        });
        assertTrue(batch.getMessage().contains("batch size: 32 saved, 64 now"), batch.getMessage());
        assertEquals(List.of(10L, 5L), steps(dir), "a refused resume writes nothing");
    }

    @Test
    void aCheckpointReadsInH5pyWithTheModelsValues(@TempDir Path dir) {
        TopicRun run = fitTopics(topics(true).optEpochs(2).optCheckpoints(Checkpoints.builder().setFolder(dir).optEverySteps(7).optKeep(1).build()));
        assertEquals(List.of(20L), steps(dir), "keep(1): only the final checkpoint is left");
        String out = PythonPeer.run("""
                import sys, json, h5py, numpy as np
                with h5py.File(sys.argv[1], 'r') as f:
                    logits = f['arrays/parameters/topicTerms'][()]
                    e = np.exp(logits - logits.max(axis=1, keepdims=True))
                    terms = e / e.sum(axis=1, keepdims=True)
                    state = json.loads(f['state'][0])
                    print(f.attrs['format'] if isinstance(f.attrs['format'], str) else f.attrs['format'].decode())
                    print(logits.dtype, logits.shape, f['arrays/rowAdam/documentTopics/m'].shape)
                    print(state['epoch'], state['steps'], json.loads(state['loader'])['epoch'])
                    print(' '.join(repr(float(v)) for v in terms[0]))
                    print(' '.join(repr(float(v)) for v in f['history/step_loss'][()]))
                """, dir.resolve(Checkpoints.fileName(20)));
        String[] lines = out.split("\n");
        assertEquals("memfit checkpoint", lines[0]);
        assertEquals("float32 (3, 60) (300, 3)", lines[1]);
        assertEquals("3 20 2", lines[2], "after 2 epochs: epoch 3 next, 20 steps, the loader at its epoch 2");
        float[] topic0 = run.topicTerms()[0];
        String[] values = lines[3].split(" ");
        for (int i = 0; i < topic0.length; i++) {
            assertEquals(topic0[i], Double.parseDouble(values[i]), 1e-6, "topic 0, term " + i);
        }
        double[] losses = java.util.Arrays.stream(lines[4].split(" ")).mapToDouble(Double::parseDouble).toArray();
        assertArrayEquals(run.fit().stepLosses(), losses, 0.0);
    }

    @Test
    void aTimedPolicySavesAfterTheStepThatMakesItDueAndStartingOverClearsTheFolder(@TempDir Path dir) {
        FitResult timed = fitTopics(topics(true).optEpochs(1)
                .optCheckpoints(Checkpoints.builder().setFolder(dir).optEveryTime(Duration.ofNanos(1)).optKeep(2).build())).fit();
        assertEquals(10, timed.checkpoints().written(), "due after every one of the 10 steps");
        assertTrue(timed.checkpoints().seconds() > 0 && timed.checkpoints().lastBytes() > 0);
        assertEquals(List.of(10L, 9L), steps(dir));
        FitResult over = fitTopics(topics(true).optEpochs(1)
                .optCheckpoints(Checkpoints.builder().setFolder(dir).optEverySteps(4).optResume(false).build())).fit();
        assertTrue(over.resumedFrom().isEmpty());
        assertEquals(List.of(10L, 8L), steps(dir), "the old run's checkpoints went with the first new one");
        MemfitException noFolder = assertThrows(MemfitException.class, () -> Checkpoints.builder().optEverySteps(3).build(),
                "a policy without a folder is refused when it is built");
        assertTrue(noFolder.getMessage().contains("setFolder"), noFolder.getMessage());
        MemfitException noInterval = assertThrows(MemfitException.class, () -> Checkpoints.builder().setFolder(dir).build());
        assertTrue(noInterval.getMessage().contains("optEverySteps(n), optEveryTime(duration)"), noInterval.getMessage());
        assertThrows(MemfitException.class, () -> Checkpoints.builder().setFolder(dir).optEverySteps(2).optKeep(0).build());
    }

    @Test
    void anImageVaeResumesWithTheSameNoise(@TempDir Path dir) {
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(120).setSize(12)
                .optPerStack(120).optNoise(0.1).optMaxAngle(30).optSeed(2).write(dir.resolve("particles"));
        Supplier<ImageVae.Builder> vae = () -> ImageVae.builder().optEpochs(3).optHidden(16).optSeed(7)
                .optProgress(ProgressListener.silent());
        Function<ImageVae.Builder, FitResult> fit = builder -> {
            try (ImageVae model = builder.build();
                 Loader loader = Datasets.particles(written.star()).lazy(2).optBatchSize(20).optShuffle(3).build()) {
                return model.fit(loader);
            }
        };
        FitResult straight = fit.apply(vae.get());
        Checkpoints policy = Checkpoints.builder().setFolder(dir.resolve("runs")).optEverySteps(4).build();
        assertThrows(Crash.class, () -> fit.apply(vae.get().optCheckpoints(policy).optProgress(crashAt(10))));
        FitResult resumed = fit.apply(vae.get().optCheckpoints(policy));
        assertEquals(8, resumed.checkpoints().resumedAtStep());
        assertArrayEquals(straight.stepLosses(), resumed.stepLosses(), 0.0);
    }

    @Test
    void aCellClassifierWithAccumulationAndWeightedSamplingResumes(@TempDir Path dir) {
        int[] labels = new int[600];
        try (ArraySource cells = CellClassifierTest.atlas(labels, 30)) {
            Supplier<CellClassifier.Builder> classifier = () -> CellClassifier.builder().setClasses(3).setLabels(labels)
                    .optEpochs(3).optHidden(16).optGradientAccumulation(3).optProgress(ProgressListener.silent());
            Function<CellClassifier.Builder, FitResult> fit = builder -> {
                try (CellClassifier model = builder.build();
                     Loader loader = Datasets.of(cells).optBatchSize(50).optSampler(new WeightedSampler(labels, 1, 2)).build()) {
                    return model.fit(loader);
                }
            };
            FitResult straight = fit.apply(classifier.get());
            // 12 batches an epoch in steps of 3: checkpoints only between steps, never inside an accumulation
            Checkpoints policy = Checkpoints.builder().setFolder(dir).optEverySteps(2).build();
            assertThrows(Crash.class, () -> fit.apply(classifier.get().optCheckpoints(policy).optProgress(crashAt(23))));
            assertEquals(List.of(6L, 4L), steps(dir));
            FitResult resumed = fit.apply(classifier.get().optCheckpoints(policy));
            assertArrayEquals(straight.stepLosses(), resumed.stepLosses(), 0.0);
            assertArrayEquals(straight.losses(), resumed.losses(), 0.0);
            MemfitException relabelled = assertThrows(MemfitException.class, () -> {
                labels[0] = 1;
                fit.apply(classifier.get().optCheckpoints(policy));
            });
            assertTrue(relabelled.getMessage().contains("labels (CRC-32C)"), relabelled.getMessage());
        }
    }

    /**
     * A classifier fed by an {@code .h5ad} stream (anndata's defaults, and gzip-compressed X) crashes inside an epoch:
     * the block-shuffled loader resumes inside it (at the sampler's position) and the fit ends as the uninterrupted one.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "compression {0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"None", "'gzip'"})
    void aClassifierOnAnH5adStreamResumesInsideAnEpoch(String compression, @TempDir Path dir) {
        Path file = dir.resolve("cells.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(3)
                types = rng.integers(0, 3, 700)
                x = rng.poisson(1.0, (700, 30)).astype(np.float32)
                for t in range(3):
                    x[types == t, t * 5:(t + 1) * 5] += rng.poisson(6.0, ((types == t).sum(), 5))
                ad.AnnData(sp.csr_matrix(x)).write_h5ad(sys.argv[1], compression=%s)
                np.savetxt(sys.argv[1] + '.labels', types, fmt='%%d')
                print('ok')
                """.formatted(compression), file));
        int[] labels;
        try {
            labels = Files.readAllLines(Path.of(file + ".labels")).stream().mapToInt(Integer::parseInt).toArray();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        Supplier<CellClassifier.Builder> classifier = () -> CellClassifier.builder().setClasses(3).setLabels(labels)
                .optEpochs(3).optHidden(16).optLearningRate(0.01).optProgress(ProgressListener.silent());
        Function<CellClassifier.Builder, FitResult> fit = builder -> {
            try (CellClassifier model = builder.build();
                 Loader stream = Datasets.h5ad(file).optBlockShuffle(100, 9).optBatchSize(32).optShuffle(2)
                         .build()) {
                return model.fit(stream);
            }
        };
        FitResult straight = fit.apply(classifier.get());
        assertEquals(3 * 22, straight.stepLosses().length, "22 batches an epoch");
        Checkpoints policy = Checkpoints.builder().setFolder(dir.resolve("runs")).optEverySteps(5).build();
        assertThrows(Crash.class, () -> fit.apply(classifier.get().optCheckpoints(policy).optProgress(crashAt(33))));
        FitResult resumed = fit.apply(classifier.get().optCheckpoints(policy));
        assertEquals(30, resumed.checkpoints().resumedAtStep(), "step 30: batch 8 of epoch 2, inside the epoch");
        assertArrayEquals(straight.stepLosses(), resumed.stepLosses(), 0.0);
    }

    @Test
    void oneFitAtATimeWritesAFolder(@TempDir Path dir) throws Exception {
        java.util.concurrent.CountDownLatch running = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        ProgressListener held = (task, total, unit) -> steps -> {
            running.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        Checkpoints policy = Checkpoints.builder().setFolder(dir).optEverySteps(5).build();
        java.util.concurrent.CompletableFuture<TopicRun> first = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> fitTopics(topics(true).optEpochs(1).optCheckpoints(policy).optProgress(held)));
        running.await();
        MemfitException second = assertThrows(MemfitException.class,
                () -> fitTopics(topics(true).optEpochs(1).optCheckpoints(policy)));
        assertTrue(second.getMessage().contains(dir.toString()), second.getMessage());
        release.countDown();
        assertEquals(10, first.get().fit().stepLosses().length);
        // released at the end of the first fit: the next one resumes from its final checkpoint
        assertEquals(10, fitTopics(topics(true).optEpochs(1).optCheckpoints(policy)).fit().checkpoints().resumedAtStep());
    }

    private static ProgressListener noting(List<String> notes) {
        return new ProgressListener() {
            @Override
            public Task start(String task, long total, String unit) {
                return steps -> { };
            }

            @Override
            public void note(String line) {
                notes.add(line);
            }
        };
    }

    private static List<Long> steps(Path dir) {
        return Checkpoints.list(dir).stream().map(Checkpoints.Saved::step).toList();
    }

    private static void flipByte(Path file, long position) throws IOException {
        try (RandomAccessFile raw = new RandomAccessFile(file.toFile(), "rw")) {
            raw.seek(position);
            int value = raw.read();
            raw.seek(position);
            raw.write(value ^ 0x40);
        }
        assertFalse(Files.size(file) == 0);
    }
}
