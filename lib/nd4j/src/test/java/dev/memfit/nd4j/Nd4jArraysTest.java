package dev.memfit.nd4j;

import dev.memfit.PythonPeer;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.api.ndarray.INDArray;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class Nd4jArraysTest {

    /** numpy writes value == C index in Fortran order (little and big endian); ND4J must see the same elements. */
    @Test
    void fortranOrderFilesAreNotScrambled(@TempDir Path dir) {
        PythonPeer.run("""
                import sys, numpy as np
                a = np.arange(60, dtype='<f8').reshape(3, 4, 5)
                np.save(sys.argv[1] + '/f.npy', np.asfortranarray(a))
                np.save(sys.argv[1] + '/fbe.npy', np.asfortranarray(a.astype('>f4')))
                np.save(sys.argv[1] + '/c.npy', a.astype('<i4'))
                """, dir);
        for (String name : new String[]{"f.npy", "fbe.npy", "c.npy"}) {
            try (NpyArray array = Npy.map(dir.resolve(name))) {
                INDArray view = Nd4jArrays.view(array);
                assertArrayEquals(new long[]{3, 4, 5}, view.shape(), name);
                for (int i = 0; i < 3; i++) {
                    for (int j = 0; j < 4; j++) {
                        for (int k = 0; k < 5; k++) {
                            assertEquals(i * 20 + j * 5 + k, view.getDouble(i, j, k), 0.0, name + " (" + i + "," + j + "," + k + ")");
                        }
                    }
                }
                assertEquals(1770.0, view.sumNumber().doubleValue(), 0.0, name);
            }
        }
    }

    @Test
    void batchViewSharesMemory(@TempDir Path dir) {
        Path file = Npy.write(dir.resolve("m.npy"), new float[][]{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
        try (Loader loader = Datasets.npy(file).mapped().optBatchSize(2).build()) {
            Batch batch = loader.epoch(0).iterator().next();
            INDArray view = Nd4jArrays.view(batch);
            assertArrayEquals(new long[]{2, 3}, view.shape());
            assertEquals(6.0, view.getDouble(1, 2), 0.0);
            batch.data().set(ValueLayout.JAVA_FLOAT, 5L * Float.BYTES, 60f);
            assertEquals(60.0, view.getDouble(1, 2), 0.0, "a view, not a copy");
        }
    }
}
