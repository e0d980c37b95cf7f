package dev.memfit.cli;

import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** {@code memfit generate atlas} with its layout options, read by anndata and h5py. */
class GenerateAtlasCommandTest {

    @Test
    void layoutsAndCompressionAreWhatH5pyReports(@TempDir Path dir) {
        String[] common = {"generate", "atlas", "--cells", "1500", "--genes", "300", "--seed", "3"};
        assertEquals(0, Main.execute(concat(common, "-o", dir.resolve("default.h5ad").toString())));
        assertEquals(0, Main.execute(concat(common, "--compression", "gzip", "--shuffle", "--compression-level", "6",
                "-o", dir.resolve("gzip.h5ad").toString())));
        assertEquals(0, Main.execute(concat(common, "--layout", "contiguous", "-o", dir.resolve("contiguous.h5ad").toString())));
        assertEquals("ok", PythonPeer.run("""
                import sys, h5py, anndata as ad
                from h5py._hl.filters import guess_chunk
                d = sys.argv[1]
                ref = ad.read_h5ad(d + '/contiguous.h5ad')
                for name, chunked, compression, opts, shuffle in (('default', True, None, None, False),
                                                                  ('gzip', True, 'gzip', 6, True),
                                                                  ('contiguous', False, None, None, False)):
                    a = ad.read_h5ad(d + '/' + name + '.h5ad')
                    assert a.shape == (1500, 300) and (a.X != ref.X).nnz == 0, name
                    with h5py.File(d + '/' + name + '.h5ad', 'r') as f:
                        x = f['X/data']
                        expected = guess_chunk(x.shape, None, 4) if chunked else None
                        assert x.chunks == expected, (name, x.chunks, expected)
                        assert (x.compression, x.compression_opts, x.shuffle) == (compression, opts, shuffle), name
                print('ok')
                """, dir));
    }

    @Test
    void compressionWithoutChunksIsAUsageError(@TempDir Path dir) {
        Path out = dir.resolve("never.h5ad");
        assertEquals(2, Main.execute("generate", "atlas", "--cells", "10", "--layout", "contiguous", "--compression", "gzip",
                "-o", out.toString()));
        assertFalse(Files.exists(out));
    }

    private static String[] concat(String[] first, String... more) {
        String[] all = java.util.Arrays.copyOf(first, first.length + more.length);
        System.arraycopy(more, 0, all, first.length, more.length);
        return all;
    }
}
