package dev.memfit.io.hdf5;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.PausingProgress;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Two packs to one output at once: the second is refused with one clear message, the first finishes intact. */
class PackLockTest {

    @Test
    void aSecondPackToTheSameOutputIsRefusedWhileTheFirstRuns(@TempDir Path dir) throws Exception {
        Path one = dir.resolve("one");
        Path two = dir.resolve("two");
        PythonPeer.run("""
                import sys, os, numpy as np
                for folder, base in ((sys.argv[1], 0), (sys.argv[2], 1000)):
                    os.makedirs(folder)
                    for i in range(6):
                        np.save(os.path.join(folder, 'sample_%d.npy' % i), np.full((2, 3), base + i, np.float32))
                """, one, two);
        Path output = dir.resolve("packed.h5");
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        // the first pack pauses at its first file, holding the output
        ProgressListener pausing = PausingProgress.of(started, resume);
        try (ExecutorService pool = Executors.newSingleThreadExecutor()) {
            Future<Pack.Result> packing = pool.submit(() -> Pack.pack(one, output, pausing));
            assertTrue(started.await(60, TimeUnit.SECONDS));
            MemfitException refused = assertThrows(MemfitException.class,
                    () -> Pack.pack(two, output, ProgressListener.silent()));
            assertEquals("another memfit writer (pid " + ProcessHandle.current().pid() + ", another thread of this "
                    + "process) is writing " + output.toAbsolutePath() + "; wait for it to finish or stop it, then run again",
                    refused.getMessage());
            resume.countDown();
            assertEquals(6, packing.get().samples());
        }
        assertEquals("[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]", PythonPeer.run("""
                import sys, h5py
                with h5py.File(sys.argv[1], 'r') as f:
                    print([float(s[0, 0]) for s in f['samples'][:]])
                """, output), "the first pack's samples, read by h5py");
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(0, files.filter(f -> f.getFileName().toString().startsWith(".")).count(),
                    "no lock or temporary file left");
        }
    }
}
