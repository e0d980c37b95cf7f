package dev.memfit.io.mrc;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ObservedStorage;
import dev.memfit.PythonPeer;
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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * RELION STAR files as RELION 3.1+ writes them (optics + particles), with the quoting, comments and line endings
 * that real files carry; the particles loaded are checked pixel by pixel against the stacks mrcfile wrote.
 */
class StarTest {

    @TempDir
    static Path dir;

    /** Stack s, image z, pixel (y, x) holds s*1000 + z*100 + y*10 + x; two stacks, one in a folder with a space. */
    @BeforeAll
    static void stacks() {
        assertEquals("ok", PythonPeer.run("""
                import sys, os, numpy as np, mrcfile
                d = sys.argv[1]
                os.makedirs(f'{d}/my stacks', exist_ok=True)
                for s, name in enumerate(['stack_a.mrcs', 'my stacks/stack b.mrcs']):
                    z, y, x = np.meshgrid(np.arange(3), np.arange(4), np.arange(4), indexing='ij')
                    with mrcfile.new(f'{d}/{name}', overwrite=True) as mrc:
                        mrc.set_data((s * 1000 + z * 100 + y * 10 + x).astype(np.float32))
                        mrc.set_image_stack()
                print('ok')
                """, dir));
    }

    /** RELION 3.1 layout; the micrograph name before the image name holds a space, so splitting on spaces shifts it. */
    private static final String RELION_31 = """
            # version 30001

            data_optics

            loop_
            _rlnOpticsGroupName #1
            _rlnOpticsGroup #2
            _rlnImagePixelSize #3
            _rlnImageSize #4
            _rlnImageDimensionality #5
            opticsGroup1            1     1.060000            4            2
            \s
            # version 30001

            data_particles

            loop_
            _rlnCoordinateX #1
            _rlnMicrographName #2
            _rlnImageName #3
            _rlnOpticsGroup #4
              1219.000000 "MotionCorr/mic 1.mrc" 000003@stack_a.mrcs 1
              211.000000  'it's mic 2.mrc'   "2@my stacks/stack b.mrcs"   1   # picked by hand
            # a comment line between rows

              17.5 plain.mrc '1@stack_a.mrcs' 1
              18.5 "x y" "3@my stacks/stack b.mrcs" 1
            """;

    /** Particle i comes from (stack, image) as the file says. */
    private static final int[][] EXPECTED = {{0, 2}, {1, 1}, {0, 0}, {1, 2}};

    @Test
    void relion31OpticsAndParticlesWithQuotedNamesLoadTheRightImages() throws IOException {
        for (String ending : new String[]{"\n", "\r\n"}) {
            Path star = dir.resolve(ending.length() == 1 ? "lf.star" : "crlf.star");
            Files.writeString(star, RELION_31.replace("\n", ending));
            ParticleStack stack = ParticleStack.open(star);
            assertEquals(4, stack.size());
            assertEquals(List.of(dir.resolve("stack_a.mrcs"), dir.resolve("my stacks/stack b.mrcs")), stack.files());
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment image = arena.allocate(16 * Float.BYTES);
                for (int i = 0; i < EXPECTED.length; i++) {
                    try (MrcReader reader = Mrc.open(stack.files().get(stack.fileOf(i)))) {
                        reader.readImages(stack.imageOf(i), 1, image);
                    }
                    for (int y = 0; y < 4; y++) {
                        for (int x = 0; x < 4; x++) {
                            float want = EXPECTED[i][0] * 1000 + EXPECTED[i][1] * 100 + y * 10 + x;
                            assertEquals(want, image.getAtIndex(ValueLayout.JAVA_FLOAT, y * 4 + x),
                                    star.getFileName() + " particle " + i + " pixel " + y + "," + x);
                        }
                    }
                }
            }
        }
    }

    @Test
    void theOpticsImageSizeMustMatchTheStacks() throws IOException {
        Path star = dir.resolve("optics.star");
        Files.writeString(star, RELION_31.replace("1.060000            4            2", "1.060000            6            2"));
        assertEquals(star + ": expected on line 11 an _rlnImageSize that matches the stacks (4x4 in "
                + dir.resolve("stack_a.mrcs") + "), found '6'",
                assertThrows(InvalidFileException.class, () -> ParticleStack.open(star)).getMessage());
    }

    @Test
    void aLargeStarThroughAStorageIsReadInRequestsOfOneMebibyte() throws IOException {
        Path star = dir.resolve("large.star");
        StringBuilder text = new StringBuilder("data_particles\nloop_\n_rlnImageName #1\n_rlnDefocusU #2\n");
        for (int i = 0; i < 60_000; i++) {
            text.append(String.format(java.util.Locale.ROOT, "%06d@stacks/stack_%03d.mrcs %.2f%n", i % 1000 + 1, i / 1000, 10000 + i * 0.25));
        }
        Files.writeString(star, text);
        long size = Files.size(star);
        assertTrue(size > 2 * (1 << 20), "the listing spans 3 reads: " + size);
        java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
        List<List<String>> rows = new java.util.ArrayList<>();
        try (ObservedStorage counting = new ObservedStorage(dev.memfit.io.storage.Storage.local(), "counted",
                (file, position, into) -> reads.incrementAndGet())) {
            Star.read(star, counting, new Star.Handler() {
                @Override
                public void row(List<String> values, long line) {
                    rows.add(List.copyOf(values)); // the parser reuses its list
                }
            });
        }
        // the decoder asks for 8 KiB at a time; the storage sees one request per MiB
        assertEquals((size + (1 << 20) - 1) >> 20, reads.get());
        assertEquals(Star.read(star).getFirst().loop("_rlnImageName").rows(), rows);
    }

    @Test
    void readsBlocksLoopsPairsAndQuotes() throws IOException {
        Path star = dir.resolve("model.star");
        Files.writeString(star, "\uFEFFdata_\r\n_rlnVersion 30001  # trailing\r\n_rlnTitle 'a \"quoted\" title'\r\n"
                + "loop_ _rlnA _rlnB\r\n1 'x'y'\r\n\r\n2 \"_notATag\"\r\ndata_empty\r\nloop_\r\n_rlnC #1\r\n");
        List<Star.Block> blocks = Star.read(star);
        assertEquals(2, blocks.size());
        assertEquals("", blocks.get(0).name());
        assertEquals("30001", blocks.get(0).pairs().get("_rlnVersion"));
        assertEquals("a \"quoted\" title", blocks.get(0).pairs().get("_rlnTitle"));
        Star.Loop loop = blocks.get(0).loop("_rlnB");
        assertEquals(List.of("_rlnA", "_rlnB"), loop.columns());
        assertEquals(List.of(List.of("1", "x'y"), List.of("2", "_notATag")), loop.rows());
        assertEquals(4, loop.line());
        assertEquals("empty", blocks.get(1).name());
        assertEquals(0, blocks.get(1).loop("_rlnC").rows().size());
        assertNull(blocks.get(1).loop("_rlnImageName"));
    }

    /** Pre-3.1 files have one unnamed block; it is read the same way. */
    @Test
    void relion30UnnamedBlock() throws IOException {
        Path star = dir.resolve("old.star");
        Files.writeString(star, "\ndata_\n\nloop_\n_rlnImageName #1\n_rlnDefocusU #2\n2@stack_a.mrcs 10000\n"
                + "\"1@my stacks/stack b.mrcs\" 12000\n");
        ParticleStack stack = ParticleStack.open(star);
        assertEquals(2, stack.size());
        assertEquals(List.of(0, 1), List.of(stack.fileOf(0), stack.fileOf(1)));
        assertEquals(List.of(1L, 0L), List.of(stack.imageOf(0), stack.imageOf(1)));
        // a quote inside a bare value does not start a quoted value (CIF): the row has four values, not two
        Path inner = dir.resolve("inner.star");
        Files.writeString(inner, "data_\nloop_\n_rlnImageName #1\n_rlnDefocusU #2\n1@\"my stacks/stack b.mrcs\" 12000\n");
        assertTrue(assertThrows(InvalidFileException.class, () -> ParticleStack.open(inner)).getMessage()
                .contains("expected on line 5 2 values, one per column of the loop_ on line 2 (_rlnImageName _rlnDefocusU), found 4 values"));
    }

    @Test
    void aRowWithAMissingValueNamesItsLine() throws IOException {
        Path star = dir.resolve("short.star");
        Files.writeString(star, RELION_31.replace("17.5 plain.mrc '1@stack_a.mrcs' 1", "17.5 '1@stack_a.mrcs' 1"));
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> ParticleStack.open(star));
        assertEquals(star + ": expected on line 26 4 values, one per column of the loop_ on line 17 (_rlnCoordinateX "
                + "_rlnMicrographName _rlnImageName _rlnOpticsGroup), found 3 values: '  17.5 '1@stack_a.mrcs' 1'",
                e.getMessage());
        Path extra = dir.resolve("extra.star");
        Files.writeString(extra, RELION_31.replace("  1219.000000 \"MotionCorr/mic 1.mrc\"", "  1219.000000 MotionCorr/mic 1.mrc"));
        assertTrue(assertThrows(InvalidFileException.class, () -> ParticleStack.open(extra)).getMessage()
                .contains("expected on line 22 4 values, one per column of the loop_ on line 17"));
    }

    @Test
    void syntaxErrorsNameTheLine() throws IOException {
        String[][] cases = {
                {"data_\nloop_\n_rlnImageName\n\"1@stack_a.mrcs 2\n", "on line 4 a closing \" followed by a space or the end of the line, found an unterminated quoted value starting at column 1"},
                {"loop_\n_rlnImageName\n1@stack_a.mrcs\n", "on line 1 a data_ block before any content, found 'loop_'"},
                {"data_\n_rlnImageName\n", "on line 2 a value after _rlnImageName on the same line, found the end of the line"},
                {"data_\n1@stack_a.mrcs\n", "on line 2 data_, loop_ or a _tag (a value belongs after its _tag or in a loop_ row), found the value '1@stack_a.mrcs'"},
                {"data_\nloop_\n_rlnImageName\n_rlnImageName\n", "on line 4 each column of the loop_ on line 2 once, found '_rlnImageName' twice"},
                {"data_\nloop_\ndata_x\n", "column tags (_rlnName) after the loop_ on line 2, found none"},
                {"data_\n_rlnText\n;\nsome text\n;\n", "on line 2 a value after _rlnText on the same line"},
                {"data_\nloop_\n_a\n;x\n", "on line 4 a value (RELION files have no multi-line ;text; fields), found a line starting with ';'"},
                {"data_\nsave_frame\n", "on line 2 data_, loop_, a _tag or a value (RELION files have no save frames, global_ or stop_), found 'save_frame'"},
                {"data_\nloop_\n_rlnImageName\n1@a\u0000b\n", "on line 4 text, found a NUL byte at column 4 (a binary file?)"},
        };
        for (String[] c : cases) {
            Path star = dir.resolve("bad.star");
            Files.writeString(star, c[0]);
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> Star.read(star), c[0]);
            assertTrue(e.getMessage().startsWith(star + ": expected " + c[1]), e.getMessage());
            assertEquals(1, e.getMessage().lines().count(), e.getMessage());
        }
        Path binary = dir.resolve("binary.star");
        Files.write(binary, new byte[]{'d', 'a', 't', 'a', '_', '\n', (byte) 0xff, (byte) 0xfe, '\n'});
        assertEquals(binary + ": expected a UTF-8 text file, found bytes that are not UTF-8 text (a binary file?)",
                assertThrows(InvalidFileException.class, () -> Star.read(binary)).getMessage());
    }

    @Test
    void imageNamesAreChecked() throws IOException {
        String[][] cases = {
                {"0@stack_a.mrcs", "on line 4 an _rlnImageName of the form index@stack with an index from 1, found '0@stack_a.mrcs'"},
                {"-1@stack_a.mrcs", "an index from 1, found '-1@stack_a.mrcs'"},
                {"x@stack_a.mrcs", "an index from 1, found 'x@stack_a.mrcs'"},
                {"4@stack_a.mrcs", "on line 4 an image index in [1, 3] of " + dir.resolve("stack_a.mrcs") + ", found index 4"},
                {"stack_a.mrcs", "on line 4 an _rlnImageName of the form index@stack (the stack holds 3 images), found 'stack_a.mrcs' without an index"},
                {"2@", "on line 4 an _rlnImageName naming a stack (index@stack), found '2@'"},
        };
        for (String[] c : cases) {
            Path star = dir.resolve("names.star");
            Files.writeString(star, "data_\nloop_\n_rlnImageName\n" + c[0] + "\n");
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> ParticleStack.open(star), c[0]);
            assertTrue(e.getMessage().startsWith(star + ": expected "), e.getMessage());
            assertTrue(e.getMessage().contains(c[1]), e.getMessage());
        }
        Path missing = dir.resolve("missing.star");
        Files.writeString(missing, "data_\nloop_\n_rlnImageName\n1@stack_a.mrcs\n1@nowhere.mrcs\n");
        String message = assertThrows(MemfitException.class, () -> ParticleStack.open(missing)).getMessage();
        assertTrue(message.startsWith(missing + " line 5: expected an existing stack 'nowhere.mrcs', found none under "
                + dir.toAbsolutePath().normalize() + ", "), message);
    }

    @Test
    void theParticleTableIsChosenOrTheChoiceExplained() throws IOException {
        Path none = dir.resolve("none.star");
        Files.writeString(none, "data_optics\nloop_\n_rlnOpticsGroup\n1\n");
        assertEquals(none + ": expected one loop_ with an _rlnImageName column (the particles, in data_particles when "
                + "there are several), found none in data_optics",
                assertThrows(InvalidFileException.class, () -> ParticleStack.open(none)).getMessage());
        Path two = dir.resolve("two.star");
        Files.writeString(two, "data_a\nloop_\n_rlnImageName\n1@stack_a.mrcs\ndata_b\nloop_\n_rlnImageName\n2@stack_a.mrcs\n");
        assertTrue(assertThrows(InvalidFileException.class, () -> ParticleStack.open(two)).getMessage()
                .endsWith("found 2 (data_a line 2, data_b line 6)"));
        Path preferred = dir.resolve("preferred.star");
        Files.writeString(preferred, "data_a\nloop_\n_rlnImageName\n1@stack_a.mrcs\ndata_particles\nloop_\n_rlnImageName\n2@stack_a.mrcs\n");
        ParticleStack stack = ParticleStack.open(preferred);
        assertEquals(1, stack.size());
        assertEquals(1, stack.imageOf(0));
        Path empty = dir.resolve("norows.star");
        Files.writeString(empty, "data_particles\nloop_\n_rlnImageName #1\n");
        assertEquals(empty + ": expected particles in the loop_ on line 2, found no rows",
                assertThrows(InvalidFileException.class, () -> ParticleStack.open(empty)).getMessage());
    }

    @Test
    void listingsThatListNothingOrAreFolders() throws IOException {
        Path blank = dir.resolve("blank.txt");
        Files.writeString(blank, "  \n\t\n# only a comment\n");
        assertEquals(blank + ": expected a list of particle stacks, one .mrcs path per line, found no entries (only "
                + "blank lines and # comments)", assertThrows(InvalidFileException.class, () -> ParticleStack.open(blank)).getMessage());
        Path empty = Files.writeString(dir.resolve("empty.txt"), "");
        assertTrue(assertThrows(InvalidFileException.class, () -> ParticleStack.open(empty)).getMessage()
                .endsWith("found an empty file"));
        Path folder = Files.createDirectories(dir.resolve("folder.txt"));
        assertEquals(folder + ": expected a list of particle stacks (one .mrcs path per line), found a folder",
                assertThrows(MemfitException.class, () -> ParticleStack.open(folder)).getMessage());
        Path starFolder = Files.createDirectories(dir.resolve("folder.star"));
        assertEquals(starFolder + ": expected a RELION .star file, found a folder",
                assertThrows(MemfitException.class, () -> ParticleStack.open(starFolder)).getMessage());
        Path list = dir.resolve("list.txt");
        Files.writeString(list, "# stacks\r\nstack_a.mrcs\r\n\r\nmy stacks/stack b.mrcs\r\n");
        ParticleStack stack = ParticleStack.open(list);
        assertEquals(6, stack.size());
        assertEquals(1, stack.fileOf(4));
        assertEquals(1, stack.imageOf(4));
    }
}
