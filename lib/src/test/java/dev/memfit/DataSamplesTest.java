package dev.memfit;

import dev.memfit.cli.Main;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The committed fixtures are exactly what their documented command makes, and numpy reads them. */
class DataSamplesTest {

    private static final Path SAMPLES = Path.of("..", "data-samples");

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
}
