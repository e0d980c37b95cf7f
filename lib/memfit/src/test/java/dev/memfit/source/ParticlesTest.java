package dev.memfit.source;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.RecordingProgress;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.mrc.ParticleStack;
import dev.memfit.io.npy.FileSet;
import dev.memfit.synthetic.SyntheticParticles;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Eager and lazy records through {@link Particles#builder()}, and the progress of loading and writing samples. */
class ParticlesTest {

    @TempDir
    static Path dir;
    static ParticleStack stack;

    @BeforeAll
    static void particles() {
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(30).setSize(8).optPerStack(12)
                .optSeed(6).optProgress(ProgressListener.silent()).write(dir.resolve("set"));
        stack = ParticleStack.open(written.star());
    }

    @Test
    void eagerLoadReportsEveryImageAndEqualsLazy() {
        RecordingProgress progress = new RecordingProgress();
        try (ArraySource eager = Particles.builder().setRecords(stack).optThreads(2).optProgress(progress).eager();
             LazySource lazy = Particles.builder().setRecords(stack).optThreads(1).lazy();
             Arena arena = Arena.ofConfined()) {
            RecordingProgress.Seen task = progress.only();
            assertEquals("Loading particles.star", task.name());
            assertEquals(30, task.total());
            assertEquals("images", task.unit());
            assertEquals(30, task.steps().get());
            assertTrue(task.closed().get());
            MemorySegment one = arena.allocate(eager.sampleBytes());
            MemorySegment other = arena.allocate(lazy.sampleBytes());
            for (long i : new long[]{0, 11, 12, 29}) {
                eager.read(i, one);
                lazy.read(i, other);
                assertEquals(-1, one.mismatch(other), "particle " + i);
            }
        }
    }

    @Test
    void theEagerStepOfADatasetTakesTheListenerToo() {
        RecordingProgress progress = new RecordingProgress();
        try (Loader loader = Datasets.particles(stack.source()).optProgress(progress).eager().optBatchSize(8).build()) {
            assertEquals(30, loader.samples());
        }
        assertEquals(30, progress.only().steps().get());
    }

    @Test
    void sampleFilesReportEveryFile() {
        RecordingProgress progress = new RecordingProgress();
        try (ArraySource eager = Particles.builder().setRecords(stack).optProgress(ProgressListener.silent()).eager()) {
            FileSet files = SampleFiles.write(new SubsetSource(eager, new long[]{3, 4, 5}, false), dir.resolve("files"), progress);
            assertEquals(3, files.size());
        }
        RecordingProgress.Seen task = progress.only();
        assertEquals("Writing files", task.name());
        assertEquals(3, task.total());
        assertEquals(3, task.steps().get());
        assertTrue(task.closed().get());
    }

    @Test
    void theBuilderSaysWhatIsMissing() {
        MemfitException none = assertThrows(MemfitException.class, () -> Particles.builder().eager());
        assertTrue(none.getMessage().startsWith("setRecords(index) is required"), none.getMessage());
        MemfitException threads = assertThrows(MemfitException.class,
                () -> Particles.builder().setRecords(stack).optThreads(0).lazy());
        assertTrue(threads.getMessage().contains("optThreads needs 1 to 1024 threads, got 0"), threads.getMessage());
    }
}
