package dev.memfit.cli;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.data.Datasets;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Crafted headers and listings through {@code inspect} and {@code estimate}: exit status 1 and the reader's one-line
 * message, never a trace, an OutOfMemoryError or a "0.0 MB" estimate with status 0.
 */
class BadHeaderCommandTest {

    @TempDir
    static Path dir;
    /** File name to the start of the message every command must print for it. */
    static final Map<String, String> CASES = new LinkedHashMap<>();

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    @BeforeAll
    static void craft() throws Exception {
        assertEquals("ok", PythonPeer.run("""
                import sys, struct, numpy as np, mrcfile
                d = sys.argv[1]
                with mrcfile.new(f'{d}/wrap.mrcs', overwrite=True) as mrc:
                    mrc.set_data(np.zeros((16, 4, 4), np.float32))
                    mrc.set_image_stack()
                raw = bytearray(open(f'{d}/wrap.mrcs', 'rb').read())
                struct.pack_into('<2i', raw, 0, 1 << 30, 1 << 30)
                open(f'{d}/wrap.mrcs', 'wb').write(raw)
                np.save(f'{d}/letters.npy', np.array(['a', 'b', 'c'], dtype='<U1'))
                np.save(f'{d}/complex.npy', np.zeros((3, 2), np.complex64))
                # a valid v1.0 header as numpy lays it out (padded to 64 bytes), for a shape whose size overflows
                with open(f'{d}/big.npy', 'wb') as f:
                    np.lib.format.write_array_header_1_0(f, {'descr': '<f4', 'fortran_order': False,
                                                             'shape': (2**40, 2**40)})
                print('ok')
                """, dir));
        Files.writeString(dir.resolve("blank.txt"), " \n\n");
        Files.writeString(dir.resolve("short.star"), "data_particles\nloop_\n_rlnImageName #1\n_rlnDefocusU #2\n"
                + "1@wrap.mrcs 100\n2@wrap.mrcs\n");
        Path wrap = dir.resolve("wrap.mrcs");
        CASES.put("wrap.mrcs", wrap + " at byte 0: expected a header whose sizes fit in a file");
        CASES.put("big.npy", dir.resolve("big.npy") + " at byte 10: expected a shape whose size fits in 64 bits, found "
                + "shape [1099511627776, 1099511627776] of '<f4': more than 2^63 bytes of data");
        CASES.put("letters.npy", dir.resolve("letters.npy") + " at byte 10: expected a numeric dtype (f2 f4 f8 i1 i2 "
                + "i4 i8 u1 u2 u4 u8 b1), found unicode strings ('<U1'), which are not numeric samples");
        CASES.put("complex.npy", dir.resolve("complex.npy") + " at byte 10: expected a numeric dtype");
        CASES.put("blank.txt", dir.resolve("blank.txt") + ": expected a list of particle stacks, one .mrcs path per "
                + "line, found no entries");
        CASES.put("short.star", dir.resolve("short.star") + ": expected on line 6 2 values, one per column of the "
                + "loop_ on line 2 (_rlnImageName _rlnDefocusU), found 1 values");
    }

    @Test
    void describeThrowsTheReadersMessage() {
        for (var c : CASES.entrySet()) {
            MemfitException e = assertThrows(MemfitException.class, () -> Datasets.describe(dir.resolve(c.getKey())));
            assertTrue(e instanceof InvalidFileException, c.getKey() + ": " + e);
            assertTrue(e.getMessage().startsWith(c.getValue()), e.getMessage());
        }
    }

    @Test
    void inspectAndEstimateExitOneWithTheMessage() {
        for (String command : new String[]{"inspect", "estimate"}) {
            for (var c : CASES.entrySet()) {
                CliRun result = run(command, dir.resolve(c.getKey()).toString());
                String label = command + " " + c.getKey() + ": " + result.err();
                assertEquals(1, result.status(), label);
                assertTrue(result.err().startsWith("memfit " + command + ": " + c.getValue()), label);
                assertEquals(1, result.err().strip().lines().count(), label);
                assertFalse(result.err().contains("Exception") || result.err().contains("at dev.memfit"), label);
                assertFalse(result.out().contains("samples of"), command + " printed an estimate: " + result.out());
            }
        }
    }
}
