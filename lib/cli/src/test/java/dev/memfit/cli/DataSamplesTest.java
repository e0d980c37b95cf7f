package dev.memfit.cli;

import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The committed fixtures are exactly what their documented command makes, and numpy reads them. */
class DataSamplesTest {

    private static final Path SAMPLES = Path.of("..", "..", "data-samples");

    @Test
    void topicsSampleIsReproducible(@TempDir Path dir) throws Exception {
        Path counts = dir.resolve("topics.npy");
        Path truth = dir.resolve("truth.npy");
        assertEquals(0, Main.execute("generate", "topics", "--documents", "500", "--terms", "200", "--topics", "4",
                "--length", "200", "--seed", "7", "-o", counts.toString(), "--truth", truth.toString()));
        assertArrayEquals(Files.readAllBytes(SAMPLES.resolve("topics-500x200.npy")), Files.readAllBytes(counts));
        assertArrayEquals(Files.readAllBytes(SAMPLES.resolve("topics-500x200-true-F.npy")), Files.readAllBytes(truth));
        assertEquals("(500, 200) float32 True (4, 200) True", PythonPeer.run("""
                import sys, numpy as np
                x = np.load(sys.argv[1]); f = np.load(sys.argv[2])
                print(x.shape, x.dtype, bool((x == np.round(x)).all() and (x >= 0).all()), f.shape,
                      bool(np.allclose(f.sum(axis=1), 1, atol=1e-4)))
                """, SAMPLES.resolve("topics-500x200.npy"), SAMPLES.resolve("topics-500x200-true-F.npy")));
    }

    @Test
    void particleSampleIsReproducible(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("particles");
        assertEquals(0, Main.execute("generate", "particles", "--particles", "100", "--size", "32", "--per-stack", "50",
                "--noise", "0.5", "--max-angle", "30", "--seed", "7", "-o", out.toString()));
        for (String name : new String[]{"particles_000.mrcs", "particles_001.mrcs", "particles.star", "conformations.npy"}) {
            assertArrayEquals(Files.readAllBytes(SAMPLES.resolve("particles").resolve(name)), Files.readAllBytes(out.resolve(name)), name);
        }
        assertEquals("(50, 32, 32) float32 True 100", PythonPeer.run("""
                import sys, mrcfile, numpy as np
                with mrcfile.open(sys.argv[1] + '/particles_000.mrcs') as m:
                    shape, dtype, stack = m.data.shape, m.data.dtype, m.is_image_stack()
                print(shape, dtype, stack, len(np.load(sys.argv[1] + '/conformations.npy')))
                """, SAMPLES.resolve("particles")));
    }

    @Test
    void atlasSampleIsReproducibleAndReadsInAnndata(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("atlas.h5ad");
        assertEquals(0, Main.execute("generate", "atlas", "--cells", "2000", "--genes", "500", "--seed", "7", "-o", out.toString()));
        Path sample = SAMPLES.resolve("atlas-2000x500.h5ad");
        assertArrayEquals(Files.readAllBytes(sample), Files.readAllBytes(out), "same bytes, whatever the thread count");
        assertEquals("(2000, 500) csr float32 {'common': 1814, 'uncommon': 172, 'rare': 14} 0.094", PythonPeer.run("""
                import sys, anndata as ad
                a = ad.read_h5ad(sys.argv[1])
                counts = a.obs['cell_type'].value_counts()
                print(a.shape, a.X.format, a.X.dtype, {k: int(counts[k]) for k in ['common', 'uncommon', 'rare']},
                      round(a.X.nnz / (a.n_obs * a.n_vars), 3))
                """, sample));
    }
}
