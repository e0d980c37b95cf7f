package dev.memfit.io.mrc;

import dev.memfit.MemfitException;
import dev.memfit.ObservedStorage;
import dev.memfit.ProgressListener;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.Formats;
import dev.memfit.io.storage.Storage;
import dev.memfit.source.ArraySource;
import dev.memfit.source.Particles;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * cryoSPARC {@code .cs} particle files where cryoSPARC writes them ({@link CsProject}: job folders, passthrough files,
 * an export with {@code >} paths): each opens with no setting, or with a data folder when moved, and every particle
 * equals what mrcfile reads at its ({@code blob/path}, {@code blob/idx}).
 */
class CsProjectTest {

    @TempDir
    static Path dir;

    private static CsProject project;
    private static Path p1;

    @BeforeAll
    static void writeProject() throws IOException {
        project = CsProject.make(dir.resolve("my data"));
        p1 = project.root().resolve("P1").toAbsolutePath().normalize();
    }

    @Test
    void everyParticleFileOpensAndMatchesMrcfile() {
        for (String cs : CsProject.PARTICLE_FILES) {
            Path file = project.root().resolve(cs);
            ParticleStack stack = ParticleStack.open(file);
            double[] expected = project.referenceSums(cs);
            assertEquals(expected.length, stack.size(), cs);
            assertEquals(CsProject.SIDE, stack.width(), cs);
            assertEquals(CsProject.SIDE, stack.height(), cs);
            assertArrayEquals(expected, sums(stack), 1e-9 * expected.length, cs);
            Path folder = file.toAbsolutePath().normalize().getParent();
            String root = cs.contains("exports/groups/P1_J5_particles/") ? folder + " (the listing's folder)"
                    : p1 + " (" + (folder.getNameCount() - p1.getNameCount()) + " folder"
                    + (folder.getNameCount() - p1.getNameCount() == 1 ? "" : "s")
                    + " above the listing; cryoSPARC names paths from its project folder)";
            assertEquals(root, stack.stackRoot(), cs);
        }
        assertEquals(CsProject.IMPORTED, ParticleStack.open(project.root().resolve(CsProject.PARTICLE_FILES.get(0))).size());
        assertEquals(CsProject.EXTRACTED, ParticleStack.open(project.root().resolve(CsProject.PARTICLE_FILES.get(1))).size());
    }

    @Test
    void aJobFileWithoutBlobFieldsTakesThemFromItsPassthroughFile() {
        ParticleStack main = ParticleStack.open(project.root().resolve("P1/J5/J5_particles.cs"));
        ParticleStack passthrough = ParticleStack.open(project.root().resolve("P1/J5/J5_passthrough_particles.cs"));
        assertEquals(CsProject.CLASSIFIED, main.size());
        assertEquals(passthrough.files(), main.files());
        for (long i = 0; i < main.size(); i++) {
            assertEquals(passthrough.fileOf(i), main.fileOf(i));
            assertEquals(passthrough.imageOf(i), main.imageOf(i));
        }
        // both jobs' stacks, as the project names them: J3's extracted .mrc stacks and J2's links to the import
        assertTrue(main.files().stream().anyMatch(f -> f.startsWith(p1.resolve("J3/extract"))), main.files().toString());
        assertTrue(main.files().stream().anyMatch(f -> f.startsWith(p1.resolve("J2/imported"))), main.files().toString());
        assertTrue(main.files().stream().allMatch(f -> f.startsWith(p1.resolve("J3/extract"))
                || f.startsWith(p1.resolve("J2/imported"))), main.files().toString());
    }

    @Test
    void describeAndTheLoaderTakeACsFile() {
        Path cs = project.root().resolve("P1/J5/J5_particles.cs");
        assertEquals(Formats.Format.CRYOSPARC, Formats.detect(cs));
        Formats.DataFile info = Datasets.describe(cs);
        assertEquals(Formats.Format.CRYOSPARC, info.format());
        assertEquals(CsProject.CLASSIFIED, info.samples());
        assertArrayEquals(new long[]{CsProject.SIDE, CsProject.SIDE}, info.sampleShape());
        assertTrue(String.valueOf(info.facts().get("format")).startsWith("cryoSPARC .cs, "), info.facts().toString());
        assertTrue(String.valueOf(info.facts().get("stacks_under")).startsWith(p1 + " (1 folder above"), info.facts().toString());
        double[] expected = project.referenceSums("P1/J5/J5_particles.cs");
        int imageBytes = CsProject.SIDE * CsProject.SIDE * Float.BYTES;
        try (Loader loader = Datasets.particles(cs.toString()).lazy(2).optBatchSize(5).build()) {
            double[] got = new double[expected.length];
            int next = 0;
            for (var batch : loader.epoch(0)) {
                for (int i = 0; i < batch.size(); i++) {
                    got[next++] = sum(batch.data().asSlice((long) i * imageBytes, imageBytes));
                }
            }
            assertEquals(expected.length, next);
            assertArrayEquals(expected, got, 1e-9 * expected.length);
        }
        try (Loader loader = Datasets.open(cs).optBatchSize(7).build()) {
            assertEquals(CsProject.CLASSIFIED, loader.samples());
        }
    }

    @Test
    void aCsMovedOutOfTheProjectNeedsItsDataFolder() throws IOException {
        Path moved = Files.createDirectories(dir.resolve("elsewhere")).resolve("J3_particles.cs");
        Files.copy(project.root().resolve("P1/J3/J3_particles.cs"), moved);
        MemfitException e = assertThrows(MemfitException.class, () -> ParticleStack.open(moved));
        String message = e.getMessage();
        assertEquals(1, message.lines().count(), message);
        assertTrue(message.startsWith(moved + " row 0: expected an existing stack 'J3/extract/001_14sep05c_00001hl_"
                + "particles.mrc', found none under " + moved.toAbsolutePath().getParent() + ", "
                + dir.toAbsolutePath().normalize() + ", "), message);
        assertTrue(message.endsWith("give the folder the names are relative to (the cryoSPARC project folder) with "
                + "--datadir or optDataDir"), message);

        ParticleStack stack = ParticleStack.open(moved, p1);
        assertEquals(p1 + " (the data folder given)", stack.stackRoot());
        assertArrayEquals(project.referenceSums("P1/J3/J3_particles.cs"), sums(stack), 1e-9 * CsProject.EXTRACTED);
        try (Loader loader = Datasets.particles(moved).optDataDir(p1).eager().optBatchSize(4).build()) {
            assertEquals(CsProject.EXTRACTED, loader.samples());
        }
    }

    @Test
    void anExportedCsReadsTheStacksBesideItOrThenTheProjects() throws IOException {
        Path group = p1.resolve("exports/groups/P1_J5_particles");
        ParticleStack beside = ParticleStack.open(group.resolve("P1_J5_particles_exported.cs"));
        assertTrue(beside.files().stream().allMatch(f -> f.startsWith(group)), beside.files().toString());
        ParticleStack bare = ParticleStack.open(p1.resolve("exports/groups/P1_J5_bare/P1_J5_particles_exported.cs"));
        assertTrue(bare.files().stream().allMatch(f -> f.startsWith(p1.resolve("J2")) || f.startsWith(p1.resolve("J3"))),
                bare.files().toString());
        double[] reference = project.referenceSums("P1/J5/J5_particles.cs");
        assertArrayEquals(reference, sums(beside), 1e-9 * reference.length);
        assertArrayEquals(reference, sums(bare), 1e-9 * reference.length);

        // sent elsewhere without its stacks: the '>' is dropped and the names start from the data folder
        Path sent = Files.createDirectories(dir.resolve("transfer")).resolve("P1_J5_particles_exported.cs");
        Files.copy(group.resolve("P1_J5_particles_exported.cs"), sent);
        MemfitException e = assertThrows(MemfitException.class, () -> ParticleStack.open(sent));
        assertTrue(e.getMessage().startsWith(sent + " row 0: expected an existing stack 'J"), e.getMessage());
        assertArrayEquals(reference, sums(ParticleStack.open(sent, p1)), 1e-9 * reference.length);
    }

    @Test
    void aFlatDataFolderHoldingTheStacksWorksAsInCryodrgn() throws IOException {
        Path flat = Files.createDirectories(dir.resolve("flat"));
        for (String folder : List.of("J2/imported", "J3/extract")) {
            try (var stacks = Files.list(p1.resolve(folder))) {
                for (Path stack : stacks.toList()) {
                    Files.copy(stack, flat.resolve(stack.getFileName()));   // the link's target, as cp does
                }
            }
        }
        for (String cs : List.of("P1/J5/J5_particles.cs", "P1/exports/groups/P1_J5_bare/P1_J5_particles_exported.cs")) {
            ParticleStack stack = ParticleStack.open(project.root().resolve(cs), flat);
            assertTrue(stack.files().stream().allMatch(f -> f.getParent().equals(flat.toAbsolutePath().normalize())),
                    stack.files().toString());
            assertArrayEquals(project.referenceSums(cs), sums(stack), 1e-9 * CsProject.CLASSIFIED, cs);
        }
    }

    @Test
    void throughAStorageTheStacksComeFromTheSameBucket() {
        Path bucket = Path.of("s3:/lab");
        AtomicInteger reads = new AtomicInteger();
        try (Storage objects = new ObservedStorage(new BucketStorage(bucket, project.root(), Storage.local()), "bucket",
                (file, position, into) -> {
                    assertTrue(file.startsWith(bucket), file.toString());
                    reads.incrementAndGet();
                })) {
            ParticleStack stack = ParticleStack.open(bucket.resolve("P1/J5/J5_particles.cs"), null, objects);
            assertEquals(CsProject.CLASSIFIED, stack.size());
            assertTrue(stack.files().stream().allMatch(f -> f.startsWith(bucket.resolve("P1"))), stack.files().toString());
            assertEquals("s3:/lab/P1 (1 folder above the listing; cryoSPARC names paths from its project folder)",
                    stack.stackRoot());
            try (ArraySource images = Particles.builder().setRecords(stack).optStorage(objects)
                    .optProgress(ProgressListener.silent()).eager()) {
                assertArrayEquals(project.referenceSums("P1/J5/J5_particles.cs"), sums(images), 1e-9 * CsProject.CLASSIFIED);
            }
        }
        assertTrue(reads.get() > 0);
    }

    /** Each particle's float64 sum, read eagerly by memfit. */
    static double[] sums(ParticleStack stack) {
        try (ArraySource images = Particles.builder().setRecords(stack).optProgress(ProgressListener.silent()).eager()) {
            return sums(images);
        }
    }

    private static double[] sums(ArraySource images) {
        try (Arena arena = Arena.ofConfined()) {
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

    /** A bucket's objects ({@code s3:/lab/key}) served from a local folder, as an object cache serves them. */
    record BucketStorage(Path bucket, Path folder, Storage local) implements Storage {

        private Path local(Path object) {
            if (!object.startsWith(bucket)) {
                throw new MemfitException(object + ": not in " + bucket);
            }
            return folder.resolve(bucket.relativize(object).toString());
        }

        @Override
        public void read(Path file, long position, MemorySegment into) {
            local.read(local(file), position, into);
        }

        @Override
        public long size(Path file) {
            Path path = local(file);
            if (!Files.isRegularFile(path)) {
                throw new MemfitException(file + ": no such object");
            }
            return local.size(path);
        }

        @Override
        public String describe() {
            return "bucket";
        }

        @Override
        public void close() {
            local.close();
        }
    }
}
