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
    void lazyThreadsReadInterleavedNeighboursOfTheSortedBatchAndFillEveryPosition() {
        // Records which thread asked for which file offset; the bytes come from the local files.
        java.util.Map<Long, String> readerOf = new java.util.concurrent.ConcurrentHashMap<>();
        dev.memfit.io.storage.Storage recording = new dev.memfit.ObservedStorage(dev.memfit.io.storage.Storage.local(), "recording",
                (file, position, into) -> {
                    if (into.byteSize() == 8 * 8 * 4) {       // one image (headers are read separately)
                        readerOf.put(stack.files().indexOf(file) * 1_000_000L + position, Thread.currentThread().getName());
                    }
                });
        // every other record of the first stack, in a scrambled order: 6 runs of one record each after sorting
        long[] batch = {10, 0, 6, 2, 8, 4};
        try (LazySource lazy = new LazySource(stack, recording, false, 3); LazySource single = Particles.builder().setRecords(stack).lazy();
             Arena arena = Arena.ofShared()) {
            MemorySegment into = arena.allocate(batch.length * lazy.sampleBytes());
            lazy.readBatch(batch, into);
            MemorySegment expected = arena.allocate(batch.length * lazy.sampleBytes());
            single.readBatch(batch, expected);
            assertEquals(-1, into.mismatch(expected), "every image lands at its batch position");
            // sorted by offset the records are 0, 2, 4, 6, 8, 10: thread g reads positions g, g + 3 of that order
            java.util.List<String> readers = java.util.stream.LongStream.of(0, 2, 4, 6, 8, 10)
                    .mapToObj(record -> readerOf.get(stack.offsetOf(record))).toList();
            assertEquals(6, readers.stream().filter(java.util.Objects::nonNull).count(), readerOf.toString());
            for (int k = 0; k < 3; k++) {
                assertEquals(readers.get(k), readers.get(k + 3), "record " + 2 * k + " and " + 2 * (k + 3) + " go to one thread: " + readers);
            }
            assertEquals(3, new java.util.HashSet<>(readers).size(), "three threads, each with neighbours of the others: " + readers);
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
