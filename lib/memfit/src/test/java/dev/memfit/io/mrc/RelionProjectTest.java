package dev.memfit.io.mrc;

import dev.memfit.MemfitException;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.Formats;
import dev.memfit.source.ArraySource;
import dev.memfit.source.Particles;
import dev.memfit.ProgressListener;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * STAR files where RELION writes them: inside the job folders of a project RELION itself ran, naming their stacks
 * from the project folder. Each opens with no setting; every particle equals what mrcfile reads at that place.
 */
class RelionProjectTest {

    @TempDir
    static Path dir;

    private static RelionProject project;

    @BeforeAll
    static void runRelion() throws IOException {
        project = RelionProject.make(dir.resolve("my project"));
    }

    @Test
    void everyStarInAJobFolderOpensAndMatchesMrcfile() {
        for (String star : RelionProject.PARTICLE_STARS) {
            Path file = project.root().resolve(star);
            ParticleStack stack = ParticleStack.open(file);
            double[] expected = project.referenceSums(star);
            assertEquals(expected.length, stack.size(), star);
            assertTrue(expected.length >= RelionProject.PICKS, star + ": " + expected.length + " particles");
            assertEquals(64, stack.width(), star);
            int up = file.getParent().getNameCount() - project.root().getNameCount();
            assertEquals(project.root().toAbsolutePath().normalize() + " (" + up + " folders above the listing; RELION "
                    + "names paths from its project folder)", stack.stackRoot(), star);
            assertArrayEquals(expected, sums(stack), 1e-9 * RelionProject.PICKS, star);
        }
    }

    @Test
    void theStacksAreTheProjectsWhateverTheWorkingFolder() {
        ParticleStack stack = ParticleStack.open(project.root().resolve("Extract/job004/particles.star"));
        assertEquals(RelionProject.MICROGRAPHS, stack.files().size());
        for (Path file : stack.files()) {
            assertTrue(file.startsWith(project.root().toAbsolutePath().normalize().resolve("Extract/job004/Micrographs")), file.toString());
        }
        assertEquals(RelionProject.PICKS * RelionProject.MICROGRAPHS, stack.size());
    }

    @Test
    void describeAndLoaderTakeTheJobFolderStar() {
        Path star = project.root().resolve("Class2D/job007/run_it002_data.star");
        Formats.DataFile info = Datasets.describe(star);
        assertEquals(RelionProject.PICKS * RelionProject.MICROGRAPHS, info.samples());
        assertTrue(String.valueOf(info.facts().get("stacks_under")).startsWith(project.root().toAbsolutePath().normalize() + " (2 folders above"),
                info.facts().toString());
        double[] expected = project.referenceSums("Class2D/job007/run_it002_data.star");
        try (Loader loader = Datasets.particles(star).lazy(2).optBatchSize(5).build()) {
            double[] got = new double[expected.length];
            int next = 0;
            for (var batch : loader.epoch(0)) {
                MemorySegment data = batch.data();
                for (int i = 0; i < batch.size(); i++) {
                    got[next++] = sum(data.asSlice(i * 64L * 64 * Float.BYTES, 64L * 64 * Float.BYTES));
                }
            }
            assertEquals(expected.length, next);
            assertArrayEquals(expected, got, 1e-9 * RelionProject.PICKS);
        }
    }

    @Test
    void aStarMovedOutOfTheProjectNeedsItsDataFolder() throws IOException {
        Path moved = Files.createDirectories(dir.resolve("elsewhere")).resolve("particles.star");
        Files.copy(project.root().resolve("Select/job008/particles_split1.star"), moved);
        MemfitException e = assertThrows(MemfitException.class, () -> ParticleStack.open(moved));
        String message = e.getMessage();
        assertEquals(1, message.lines().count(), message);
        assertTrue(message.startsWith(moved + " line "), message);
        assertTrue(message.contains("expected an existing stack 'Extract/job004/Micrographs/mic00"), message);
        assertTrue(message.contains("found none under " + moved.toAbsolutePath().getParent() + ", "
                + dir.toAbsolutePath().normalize() + ", "), message);
        assertTrue(message.contains("--datadir or optDataDir"), message);

        ParticleStack stack = ParticleStack.open(moved, project.root());
        assertEquals(project.root().toAbsolutePath().normalize() + " (the data folder given)", stack.stackRoot());
        assertArrayEquals(project.referenceSums("Select/job008/particles_split1.star"), sums(stack), 1e-9 * RelionProject.PICKS);
        try (Loader loader = Datasets.particles(moved).optDataDir(project.root()).eager().optBatchSize(4).build()) {
            assertEquals(stack.size(), loader.samples());
        }
    }

    @Test
    void aDataFolderHoldingTheStacksWithoutTheirFoldersWorksAsInCryodrgn() throws IOException {
        // cryoDRGN's fallback: stacks copied flat into one folder, the STAR still naming Extract/job004/Micrographs/...
        Path flat = Files.createDirectories(dir.resolve("flat"));
        try (var stacks = Files.list(project.root().resolve("Extract/job004/Micrographs"))) {
            for (Path stack : stacks.filter(p -> p.toString().endsWith(".mrcs")).toList()) {
                Files.copy(stack, flat.resolve(stack.getFileName()));
            }
        }
        Path star = project.root().resolve("Extract/job004/particles.star");
        ParticleStack stack = ParticleStack.open(star, flat);
        assertTrue(stack.files().stream().allMatch(f -> f.getParent().equals(flat.toAbsolutePath().normalize())), stack.files().toString());
        assertArrayEquals(project.referenceSums("Extract/job004/particles.star"), sums(stack), 1e-9 * RelionProject.PICKS);
    }

    /** Each particle's float64 sum, read eagerly by memfit. */
    private static double[] sums(ParticleStack stack) {
        try (ArraySource images = Particles.builder().setRecords(stack).optProgress(ProgressListener.silent()).eager();
             Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocate(images.sampleBytes());
            double[] sums = new double[Math.toIntExact(images.size())];
            for (int i = 0; i < sums.length; i++) {
                images.read(i, one);
                sums[i] = sum(one);
            }
            return sums;
        }
    }

    private static double sum(MemorySegment image) {
        double sum = 0;
        for (long v = 0; v < image.byteSize() / Float.BYTES; v++) {
            sum += image.getAtIndex(ValueLayout.JAVA_FLOAT, v);
        }
        return sum;
    }
}
