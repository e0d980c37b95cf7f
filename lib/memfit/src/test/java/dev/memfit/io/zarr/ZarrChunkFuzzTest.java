package dev.memfit.io.zarr;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.memfit.Fuzzing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Fuzzes one zarr array and its first chunk: the input is the array's {@code .zarray} (JSON, on one line), a
 * newline, and the bytes of chunk 0, as zarr-python wrote them with each codec memfit decodes (the Blosc frame with
 * its BloscLZ, LZ4, Snappy, zlib and zstd streams, byte and bit shuffle; zlib, gzip, zstd, lz4; no compressor;
 * vlen-utf8 strings). The array is opened from a folder holding the two, and read as {@link ZarrFuzzTest#read}
 * reads every array of a store. Seeds: {@code ZarrChunkFuzzTestInputs/fuzzChunk}, written by
 * {@code src/test/fuzz/make_zarr_seeds.py}.
 */
class ZarrChunkFuzzTest {

    private static final Path FOLDER = Fuzzing.tempFolder("memfit-fuzz-zarr-chunk");

    @FuzzTest(maxDuration = "4m")
    void fuzzChunk(byte[] bytes) throws Exception {
        int newline = indexOf(bytes, (byte) '\n');
        byte[] metadata = newline < 0 ? bytes : Arrays.copyOf(bytes, newline);
        byte[] chunk = newline < 0 ? null : Arrays.copyOfRange(bytes, newline + 1, bytes.length);
        Path store = Files.createTempDirectory(FOLDER, "store");
        try {
            Fuzzing.write(store.resolve(".zarray"), metadata);
            ZarrFuzzTest.checkNativeMemory(() -> Fuzzing.succeedsOrRefuses(bytes.length, () -> {
                String key;
                try (Zarr zarr = Zarr.open(store)) {
                    ZarrArray array = zarr.array("");
                    key = array.chunkKey(new long[Math.max(1, array.shape().length)]);
                }
                if (chunk != null) {
                    Path file = store.resolve(key);
                    Files.createDirectories(file.getParent());
                    Fuzzing.write(file, chunk);
                }
                try (Zarr zarr = Zarr.open(store)) {
                    ZarrFuzzTest.read(zarr.array(""));
                }
            }));
        } finally {
            try (Stream<Path> paths = Files.walk(store)) {
                paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static int indexOf(byte[] bytes, byte b) {
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == b) {
                return i;
            }
        }
        return -1;
    }
}
