package dev.memfit.synthetic;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.RecordingProgress;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.source.ArraySource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The synthetic data builders: what they refuse (and say), their defaults, and the progress they report. */
class SyntheticBuildersTest {

    private static void assertMessage(String expected, Executable call) {
        MemfitException e = assertThrows(MemfitException.class, call);
        assertTrue(e.getMessage().contains(expected), "expected '" + expected + "' in: " + e.getMessage());
    }

    @Test
    void particlesReportEveryImageAndRefuseBadSettings(@TempDir Path dir) {
        RecordingProgress progress = new RecordingProgress();
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(25).setSize(8).optPerStack(10)
                .optProgress(progress).write(dir.resolve("set"));
        assertEquals(3, written.stacks().size(), "25 images in stacks of 10");
        assertEquals(25, written.conformations().length);
        RecordingProgress.Seen task = progress.only();
        assertEquals("Writing particles", task.name());
        assertEquals(25, task.total());
        assertEquals("images", task.unit());
        assertEquals(25, task.steps().get());
        assertTrue(task.closed().get());

        assertMessage("setParticles(n) is required", () -> SyntheticParticles.builder().setSize(8).write(dir.resolve("a")));
        assertMessage("setSize(pixels) is required", () -> SyntheticParticles.builder().setParticles(5).write(dir.resolve("a")));
        assertMessage("optMaxAngle needs degrees in [0, 180], got 200.0",
                () -> SyntheticParticles.builder().setParticles(5).setSize(8).optMaxAngle(200).write(dir.resolve("a")));
        assertMessage("optNoise needs a standard deviation >= 0",
                () -> SyntheticParticles.builder().setParticles(5).setSize(8).optNoise(-1).write(dir.resolve("a")));
        assertMessage("optPerStack needs at least 1 image",
                () -> SyntheticParticles.builder().setParticles(5).setSize(8).optPerStack(0).write(dir.resolve("a")));
        assertFalse(Files.exists(dir.resolve("a")), "nothing written before the settings are valid");
    }

    @Test
    void atlasDefaultsAreTheImbalancedThreeTypesAndProgressCountsCells(@TempDir Path dir) {
        RecordingProgress progress = new RecordingProgress();
        SyntheticAtlas.Atlas byDefault = SyntheticAtlas.builder().setCells(3_000).setGenes(40).optSeed(8)
                .optProgress(progress).write(dir.resolve("default.h5ad"));
        SyntheticAtlas.Atlas explicit = SyntheticAtlas.builder().setCells(3_000).setGenes(40).optSeed(8)
                .optTypes(List.of("common", "uncommon", "rare"), 0.90, 0.09, 0.01).optProgramGenes(2).optFoldChange(3)
                .optMeanExpression(0.04).optDispersion(0.5).optProgress(ProgressListener.silent())
                .write(dir.resolve("explicit.h5ad"));
        assertArrayEquals(explicit.labels(), byDefault.labels());
        assertEquals(explicit.storedValues(), byDefault.storedValues());
        assertEquals(3, byDefault.typeCounts().length);
        assertTrue(byDefault.typeCounts()[0] > byDefault.typeCounts()[1] && byDefault.typeCounts()[1] > byDefault.typeCounts()[2],
                "90/9/1%: " + java.util.Arrays.toString(byDefault.typeCounts()));
        RecordingProgress.Seen task = progress.only();
        assertEquals("generating default.h5ad", task.name());
        assertEquals(3_000, task.total());
        assertEquals("cells", task.unit());
        assertEquals(3_000, task.steps().get());
        assertTrue(task.closed().get());

        Path never = dir.resolve("never.h5ad");
        assertMessage("setCells(n) is required", () -> SyntheticAtlas.builder().setGenes(10).write(never));
        assertMessage("setGenes(n) is required", () -> SyntheticAtlas.builder().setCells(10).write(never));
        assertMessage("optTypes needs one proportion per type name, got 2 types and 3 proportions",
                () -> SyntheticAtlas.builder().setCells(10).setGenes(10).optTypes(List.of("a", "b"), 0.5, 0.25, 0.25).write(never));
        assertMessage("optTypes needs proportions that are non-negative and sum to 1",
                () -> SyntheticAtlas.builder().setCells(10).setGenes(10).optTypes(List.of("a", "b"), 0.5, 0.6).write(never));
        assertMessage("lower optProgramGenes or raise setGenes",
                () -> SyntheticAtlas.builder().setCells(10).setGenes(10).optProgramGenes(4).write(never));
        assertFalse(Files.exists(never));
    }

    @Test
    void topicsRefuseBadSettingsAndTheSameSettingsDrawTheSameCorpus() {
        try (SyntheticTopics.Corpus one = SyntheticTopics.builder().setDocuments(20).setTerms(30).setTopics(3)
                .setDocumentLength(50).optSeed(4).generate();
             SyntheticTopics.Corpus two = SyntheticTopics.builder().setDocuments(20).setTerms(30).setTopics(3)
                     .setDocumentLength(50).optSeed(4).optTermConcentration(0.1).optTopicConcentration(0.5).generate()) {
            assertEquals(-1, one.counts().data().mismatch(two.counts().data()), "the defaults are 0.1 and 0.5");
            assertArrayEquals(one.trueF()[2], two.trueF()[2]);
        }
        assertMessage("setDocuments(n) is required", () -> SyntheticTopics.builder().setTerms(3).setTopics(2)
                .setDocumentLength(5).generate());
        assertMessage("setTopics(k) is required", () -> SyntheticTopics.builder().setDocuments(3).setTerms(3)
                .setDocumentLength(5).generate());
        assertMessage("setDocumentLength(words) is required", () -> SyntheticTopics.builder().setDocuments(3).setTerms(3)
                .setTopics(2).generate());
        assertMessage("concentrations must be positive", () -> SyntheticTopics.builder().setDocuments(3).setTerms(3)
                .setTopics(2).setDocumentLength(5).optTermConcentration(0).generate());
    }

    @Test
    void resamplingReportsMegabytesAndRefusesBadSettings(@TempDir Path dir) {
        float[][] rows = new float[4][1 << 16];   // 256 KiB a row: 40 rows make 10 MiB
        for (int r = 0; r < rows.length; r++) {
            java.util.Arrays.fill(rows[r], r);
        }
        try (ArraySource source = ArraySource.of("four", rows)) {
            RecordingProgress progress = new RecordingProgress();
            Path out = Resampling.builder().setSource(source).setRows(40).optChunkBytes(3L << 20).optProgress(progress)
                    .write(dir.resolve("big.npy"));
            try (NpyArray written = Npy.map(out)) {
                assertArrayEquals(new long[]{40, 1 << 16}, written.shape());
            }
            RecordingProgress.Seen task = progress.only();
            assertEquals("Writing big.npy", task.name());
            assertEquals(10, task.total());
            assertEquals("MiB", task.unit());
            assertEquals(10, task.steps().get());
            assertTrue(task.closed().get());
            assertMessage("setRows(n) is required", () -> Resampling.builder().setSource(source).write(dir.resolve("x.npy")));
            assertMessage("optChunkBytes needs at least 1 byte", () -> Resampling.builder().setSource(source).setRows(1)
                    .optChunkBytes(0).write(dir.resolve("x.npy")));
        }
        assertMessage("setSource(source) is required", () -> Resampling.builder().setRows(3).write(dir.resolve("x.npy")));
        assertFalse(Files.exists(dir.resolve("x.npy")));
    }
}
