package dev.memfit.io.hdf5;

import dev.memfit.source.SampleFiles;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.npy.FileSet;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.storage.Scratch;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.source.ArraySource;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PackTest {

    /** 40 samples of 3x5 whose element (i, y, x) is i*100 + y*10 + x. */
    private static FileSet smallFiles(Path dir) {
        float[][] rows = new float[40][15];
        for (int i = 0; i < 40; i++) {
            for (int e = 0; e < 15; e++) {
                rows[i][e] = i * 100 + (e / 5) * 10 + e % 5;
            }
        }
        try (ArraySource flat = ArraySource.of("rows", rows);
             ArraySource images = ArraySource.allocate("images", 40, new ai.djl.ndarray.types.Shape(3, 5), DType.FLOAT32)) {
            java.lang.foreign.MemorySegment.copy(flat.data(), 0, images.data(), 0, flat.totalBytes());
            return SampleFiles.write(images, dir.resolve("small"));
        }
    }

    private static List<float[]> batches(Loader loader) {
        List<float[]> result = new ArrayList<>();
        for (Batch batch : loader.epoch(1)) {
            result.add(batch.toFloatArray());
        }
        return result;
    }

    @Test
    void packedFileReadsInH5pyAndLoadsLikeTheSmallFiles(@TempDir Path dir) {
        FileSet files = smallFiles(dir);
        assertEquals(40, files.size());
        Path h5 = dir.resolve("packed.h5");
        List<String> reported = new ArrayList<>();
        long[] steps = {0};
        Pack.Result result = Pack.pack(dir.resolve("small"), h5, (task, total, unit) -> {
            reported.add(task + " " + total + " " + unit);
            return done -> steps[0] += done;
        });
        assertEquals(40, result.samples());
        assertEquals(List.of("Packing small 40 files"), reported, "progress goes to the listener passed in");
        assertEquals(40, steps[0]);
        assertEquals("(40, 3, 5) float32 True sample_000000.npy sample_000039.npy", PythonPeer.run("""
                import sys, h5py, numpy as np
                with h5py.File(sys.argv[1], 'r') as f:
                    s = f['samples']
                    i, y, x = np.meshgrid(np.arange(40), np.arange(3), np.arange(5), indexing='ij')
                    names = [n.decode() if isinstance(n, bytes) else n for n in f['names'][:]]
                    print(s.shape, s.dtype, bool(np.array_equal(s[:], i * 100 + y * 10 + x)), names[0], names[-1])
                """, h5));
        PackedFile packed = PackedFile.open(h5);
        assertEquals(40, packed.size());
        assertArrayEquals(new long[]{3, 5}, packed.sampleShape());
        try (Loader fromFiles = Datasets.records(files).lazy(4).optBatchSize(7).optShuffle(3).build();
             Loader fromPack = Datasets.records(packed).lazy(2).optBatchSize(7).optShuffle(3).build();
             Loader eagerPack = Datasets.records(packed).eager().optBatchSize(7).optShuffle(3).build()) {
            List<float[]> expected = batches(fromFiles);
            for (Loader other : List.of(fromPack, eagerPack)) {
                List<float[]> got = batches(other);
                for (int b = 0; b < got.size(); b++) {
                    assertArrayEquals(expected.get(b), got.get(b));
                }
            }
        }
    }

    @Test
    void unreadableFolderEntryStopsPackingAndLeavesNoFile(@TempDir Path dir) throws IOException {
        smallFiles(dir);
        Files.createDirectory(dir.resolve("small/zz_not_a_file.npy"));
        Path h5 = dir.resolve("packed.h5");
        MemfitException e = assertThrows(MemfitException.class, () -> Pack.pack(dir.resolve("small"), h5));
        assertTrue(e.getMessage().contains("zz_not_a_file.npy: expected a readable sample file"), e.getMessage());
        assertTrue(e.getMessage().endsWith("found a folder"), e.getMessage());
        assertFalse(Files.exists(h5));
    }

    @Test
    void mismatchedSampleStopsPackingAndKeepsThePreviousFile(@TempDir Path dir) throws IOException {
        smallFiles(dir);
        Path h5 = dir.resolve("packed.h5");
        Pack.pack(dir.resolve("small"), h5);
        long before = Files.size(h5);
        Npy.write(dir.resolve("small/sample_000040.npy"), new float[][]{{1, 2}});
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Pack.pack(dir.resolve("small"), h5));
        assertTrue(e.getMessage().contains("sample_000040.npy: expected a sample like sample_000000.npy: <f4 [3, 5]"), e.getMessage());
        assertEquals(before, Files.size(h5), "the earlier packed file is untouched");
        try (var listing = Files.list(dir)) {
            assertTrue(listing.noneMatch(p -> p.getFileName().toString().endsWith(".partial")));
        }
    }

    @Test
    void scratchCopyIsVerifiedAndReused(@TempDir Path dir) throws IOException {
        Path source = dir.resolve("data.bin");
        byte[] bytes = new byte[3_000_000];
        new java.util.Random(1).nextBytes(bytes);
        Files.write(source, bytes);
        Scratch.Copy first = Scratch.copy(source, dir.resolve("scratch"));
        assertFalse(first.reused());
        assertArrayEquals(bytes, Files.readAllBytes(first.copy()));
        assertEquals(Scratch.checksum(source, null), first.checksum());
        Scratch.Copy second = Scratch.copy(source, dir.resolve("scratch"));
        assertTrue(second.reused());
        Files.write(first.copy(), new byte[3_000_000]);
        Scratch.Copy third = Scratch.copy(source, dir.resolve("scratch"));
        assertFalse(third.reused(), "a corrupted copy is replaced");
        assertArrayEquals(bytes, Files.readAllBytes(third.copy()));
    }
    @Test
    void scratchCopyReadsThroughTheGivenStorage(@TempDir Path dir) throws IOException {
        Path source = dir.resolve("remote.bin");
        byte[] bytes = new byte[9_000_000];     // more than one 8 MiB block
        new java.util.Random(2).nextBytes(bytes);
        Files.write(source, bytes);
        var requests = new java.util.concurrent.atomic.AtomicLong();
        var served = new java.util.concurrent.atomic.AtomicLong();
        dev.memfit.io.storage.Storage local = dev.memfit.io.storage.Storage.local();
        dev.memfit.io.storage.Storage counting = new dev.memfit.ObservedStorage(local, "counting", (file, position, into) -> {
            requests.incrementAndGet();
            served.addAndGet(into.byteSize());
        });
        Scratch.Copy copy = Scratch.builder().setSource(source).optStorage(counting).optProgress(dev.memfit.ProgressListener.silent()).copyTo(dir.resolve("scratch"));
        assertFalse(copy.reused());
        assertArrayEquals(bytes, Files.readAllBytes(copy.copy()));
        assertEquals(Scratch.checksum(source, null), copy.checksum());
        assertEquals(2, requests.get(), "two blocks of at most 8 MiB");
        assertEquals(bytes.length, served.get(), "every byte of the copy came through the storage");
        Scratch.Copy again = Scratch.builder().setSource(source).optStorage(counting).optProgress(dev.memfit.ProgressListener.silent()).copyTo(dir.resolve("scratch"));
        assertTrue(again.reused());
        assertEquals(2L * bytes.length, served.get(), "checking the existing copy reads the source through the storage once more");
        counting.close();
    }
}
