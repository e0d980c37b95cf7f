package dev.memfit.data;

import dev.memfit.source.ArraySource;
import dev.memfit.source.LazySource;
import dev.memfit.source.Particles;
import dev.memfit.MemfitException;
import dev.memfit.InvalidFileException;
import dev.memfit.io.storage.PageCache;
import dev.memfit.io.mrc.ParticleStack;
import dev.memfit.io.storage.Storage;
import dev.memfit.synthetic.SyntheticParticles;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ParticleSourcesTest {

    @TempDir
    static Path dir;
    static SyntheticParticles.Written written;

    @BeforeAll
    static void generate() {
        written = SyntheticParticles.builder().setParticles(90).setSize(16).optPerStack(25).optNoise(0.1)
                .optMaxAngle(180).optSeed(3).write(dir.resolve("set"));
    }

    private static List<float[]> batches(Loader loader, long epoch) {
        List<float[]> result = new ArrayList<>();
        for (Batch batch : loader.epoch(epoch)) {
            result.add(batch.toFloatArray());
        }
        return result;
    }

    @Test
    void starTxtAndSingleStackListTheSameImages() throws IOException {
        ParticleStack star = ParticleStack.open(written.star());
        assertEquals(90, star.size());
        assertEquals(4, star.files().size());
        assertEquals(16, star.width());
        Path txt = dir.resolve("set/stacks.txt");
        Files.writeString(txt, String.join("\n", written.stacks().stream().map(p -> p.getFileName().toString()).toList()) + "\n");
        ParticleStack list = ParticleStack.open(txt);
        assertEquals(90, list.size());
        for (long i = 0; i < 90; i++) {
            assertEquals(star.fileOf(i), list.fileOf(i));
            assertEquals(star.imageOf(i), list.imageOf(i));
        }
        assertEquals(25, ParticleStack.open(written.stacks().getFirst()).size());
        assertEquals(15, ParticleStack.open(written.stacks().getLast()).size());
    }

    @Test
    void datadirResolvesRelativeNames() throws IOException {
        Path elsewhere = Files.createDirectories(dir.resolve("listings"));
        Path star = elsewhere.resolve("moved.star");
        Files.copy(written.star(), star);
        assertThrows(MemfitException.class, () -> ParticleStack.open(star));
        assertEquals(90, ParticleStack.open(star, dir.resolve("set")).size());
    }

    @Test
    void eagerAndLazyGiveTheSameBatchesForTheSameSeed() {
        try (Loader eager = Datasets.particles(written.star()).eager().optBatchSize(16).optShuffle(9).build();
             Loader lazy1 = Datasets.particles(written.star()).lazy(1).optBatchSize(16).optShuffle(9).build();
             Loader lazy8 = Datasets.particles(written.star()).lazy(8).optBatchSize(16).optShuffle(9).optThreads(2).build();
             Loader slow = Datasets.particles(written.star())
                     .optStorage(() -> new dev.memfit.ObservedStorage(Storage.local(), "delayed local",
                             (file, position, into) -> java.util.concurrent.locks.LockSupport.parkNanos(Duration.ofMillis(1).toNanos()))).lazy(4)
                     .optBatchSize(16).optShuffle(9).build()) {
            List<float[]> expected = batches(eager, 2);
            for (Loader other : List.of(lazy1, lazy8, slow)) {
                List<float[]> got = batches(other, 2);
                assertEquals(expected.size(), got.size());
                for (int b = 0; b < got.size(); b++) {
                    assertArrayEquals(expected.get(b), got.get(b), other + " batch " + b);
                }
            }
            assertTrue(lazy8.describe().contains("8 threads"));
        }
    }

    @Test
    void lazyImagesMatchTheirStackPositions() {
        ParticleStack stack = ParticleStack.open(written.star());
        try (LazySource lazy = Particles.builder().setRecords(stack).optThreads(3).lazy();
             ArraySource eager = Particles.builder().setRecords(stack).optThreads(2).eager()) {
            long[] scattered = {89, 0, 26, 25, 27, 60, 3};
            java.lang.foreign.MemorySegment batch = java.lang.foreign.Arena.ofAuto().allocate(scattered.length * lazy.sampleBytes());
            lazy.readBatch(scattered, batch);
            for (int i = 0; i < scattered.length; i++) {
                java.lang.foreign.MemorySegment one = java.lang.foreign.Arena.ofAuto().allocate(eager.sampleBytes());
                eager.read(scattered[i], one);
                assertEquals(-1, one.mismatch(batch.asSlice(i * lazy.sampleBytes(), lazy.sampleBytes())), "particle " + scattered[i]);
            }
        }
    }

    @Test
    void starNamingAMissingStack() throws IOException {
        Path star = dir.resolve("set/missing.star");
        Files.writeString(star, "data_\nloop_\n_rlnImageName #1\n1@particles_000.mrcs\n2@nowhere.mrcs\n");
        MemfitException e = assertThrows(MemfitException.class, () -> ParticleStack.open(star));
        assertTrue(e.getMessage().contains("missing.star line 5: expected an existing stack 'nowhere.mrcs', found none under "
                + dir.resolve("set").toAbsolutePath().normalize() + ", " + dir.toAbsolutePath().normalize() + ", "), e.getMessage());
        assertTrue(e.getMessage().contains("--datadir or optDataDir"), e.getMessage());
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
    }

    @Test
    void starIndexPastTheEndOfItsStack() throws IOException {
        Path star = dir.resolve("set/past.star");
        Files.writeString(star, "data_particles\nloop_\n_rlnImageName #1\n25@particles_000.mrcs\n26@particles_000.mrcs\n");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> ParticleStack.open(star));
        assertTrue(e.getMessage().contains("past.star: expected on line 5 an image index in [1, 25]"), e.getMessage());
        assertTrue(e.getMessage().endsWith("found index 26"), e.getMessage());
    }

    @Test
    void pageCacheEvictionAndResidency() {
        Path stack = written.stacks().getFirst();
        try (Storage storage = Storage.local()) {
            java.lang.foreign.MemorySegment all = java.lang.foreign.Arena.ofAuto().allocate(storage.size(stack));
            storage.read(stack, 0, all);
            assertTrue(PageCache.residentBytes(stack) >= storage.size(stack) - 4096, "just read: resident");
            PageCache.evict(stack);
            assertEquals(0, PageCache.residentBytes(stack), "evicted: nothing resident");
        }
    }
}
