package dev.memfit.io.hdf5;

import dev.memfit.DType;
import dev.memfit.io.npy.FileSet;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.io.storage.Storage;
import dev.memfit.io.storage.TempFiles;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import io.jhdf.HdfFile;
import io.jhdf.WritableHdfFile;
import io.jhdf.api.WritableDataset;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Array;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Packs a folder of many small sample files into one HDF5 file ({@link PackedFile}'s layout), written with jhdf,
 * read back and compared sample by sample before it gets its final name.
 *
 * <p>jhdf's writer takes whole Java arrays, so packing holds the data on the heap once (float32); pack folders that
 * fit in the heap, or pack in parts.
 */
public final class Pack {

    private Pack() {
    }

    /**
     * What was packed.
     *
     * @param file the packed file
     * @param samples the number of samples
     * @param bytes the size of the packed file
     * @param checksum CRC32C of all sample data as float32, identical in the sources and the packed file
     */
    public record Result(Path file, long samples, long bytes, long checksum) {
    }

    /**
     * Packs every {@code .npy} of a folder (in name order) into one file.
     *
     * @param folder the folder of one-sample files
     * @param output the {@code .h5} to write
     * @return what was packed
     */
    public static Result pack(Path folder, Path output) {
        return pack(folder, output, ProgressListener.console());
    }

    /**
     * Packs every {@code .npy} of a folder (in name order) into one file, reporting progress in files.
     *
     * @param folder the folder of one-sample files
     * @param output the {@code .h5} to write
     * @param listener where progress goes
     * @return what was packed
     * @throws MemfitException when another process is writing the output (it is locked: {@link OutputLock})
     */
    public static Result pack(Path folder, Path output, ProgressListener listener) {
        // locked before the sources are read: a second writer of the same output fails at once
        try (OutputLock lock = OutputLock.acquire(output)) {
            return pack(folder, output, listener, lock);
        }
    }

    private static Result pack(Path folder, Path output, ProgressListener listener, OutputLock lock) {
        FileSet set = FileSet.open(folder);
        long[] shape = set.sampleShape();
        long elements = Arrays.stream(shape).reduce(1, Math::multiplyExact);
        int n = Math.toIntExact(set.size());
        float[] flat = new float[Math.toIntExact(Math.multiplyExact(elements, n))];
        CRC32C sourceChecksum = new CRC32C();
        try (Storage storage = Storage.local(); Arena arena = Arena.ofConfined();
             ProgressListener.Task progress = listener.start("Packing " + folder.getFileName(), n, "files")) {
            long sampleBytes = elements * Float.BYTES;
            MemorySegment sample = arena.allocate(Math.max(sampleBytes, elements * set.dtype().byteSize()) * 2, 64);
            for (int i = 0; i < n; i++) {
                long at = DType.stagingOffset(elements, set.dtype(), DType.FLOAT32);
                storage.read(set.files().get(i), set.offsetOf(i), sample.asSlice(at, elements * set.dtype().byteSize()));
                DType.convertInPlace(sample, elements, set.dtype(), set.byteOrder(i), DType.FLOAT32);
                MemorySegment.copy(sample, ValueLayout.JAVA_FLOAT, 0, flat, (int) (i * elements), (int) elements);
                sourceChecksum.update(sample.asSlice(0, sampleBytes).asByteBuffer());
                progress.step(1);
            }
        }
        String[] names = set.files().stream().map(path -> path.getFileName().toString()).toArray(String[]::new);
        Path temporary = TempFiles.beside(lock.target());
        try {
            try (WritableHdfFile hdf = HdfFile.write(temporary)) {
                int[] dims = new int[shape.length + 1];
                dims[0] = n;
                for (int i = 0; i < shape.length; i++) {
                    dims[i + 1] = Math.toIntExact(shape[i]);
                }
                WritableDataset samples = hdf.putDataset(PackedFile.SAMPLES, nest(flat, dims));
                samples.putAttribute("source_folder", folder.toAbsolutePath().toString());
                hdf.putDataset(PackedFile.NAMES, names);
            }
            long packedChecksum = verify(temporary, set.size(), shape, List.of(names), sourceChecksum.getValue());
            AtomicMove.replace(temporary, output);
            return new Result(output, n, Files.size(output), packedChecksum);
        } catch (IOException e) {
            deleteQuietly(temporary);
            throw new UncheckedIOException("cannot write " + output, e);
        } catch (RuntimeException e) {
            deleteQuietly(temporary);
            throw Hdf5.writeFailure(output, e);
        }
    }

    /** Reads the written file back through the same path a loader uses and compares it with the sources. */
    private static long verify(Path file, long count, long[] shape, List<String> names, long expected) {
        PackedFile packed = PackedFile.open(file);
        if (packed.size() != count || !Arrays.equals(packed.sampleShape(), shape) || !packed.names().equals(names)) {
            throw new MemfitException(file + ": the packed file read back with " + packed.size() + " samples of "
                    + Arrays.toString(packed.sampleShape()) + ", expected " + count + " of " + Arrays.toString(shape));
        }
        CRC32C checksum = new CRC32C();
        try (Storage storage = Storage.local(); Arena arena = Arena.ofConfined()) {
            long sampleBytes = Arrays.stream(shape).reduce(1, Math::multiplyExact) * Float.BYTES;
            MemorySegment sample = arena.allocate(sampleBytes);
            for (long i = 0; i < count; i++) {
                storage.read(file, packed.offsetOf(i), sample);
                checksum.update(sample.asByteBuffer());
            }
        }
        if (checksum.getValue() != expected) {
            throw new MemfitException(file + ": the packed data read back differs from the source files (CRC32C "
                    + Long.toHexString(checksum.getValue()) + ", expected " + Long.toHexString(expected) + ")");
        }
        return checksum.getValue();
    }

    /** Turns flat float data into the nested Java array jhdf's writer wants, e.g. float[n][h][w]. */
    private static Object nest(float[] flat, int[] dims) {
        if (dims.length == 1) {
            return flat;
        }
        Object nested = Array.newInstance(float.class, dims);
        int innermost = dims[dims.length - 1];
        int[] index = new int[dims.length - 1];
        for (int offset = 0; offset < flat.length; offset += innermost) {
            Object row = nested;
            for (int d = 0; d < index.length - 1; d++) {
                row = Array.get(row, index[d]);
            }
            System.arraycopy(flat, offset, Array.get(row, index[index.length - 1]), 0, innermost);
            for (int d = index.length - 1; d >= 0; d--) {
                if (++index[d] < dims[d]) {
                    break;
                }
                index[d] = 0;
            }
        }
        return nested;
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // Best effort: the temporary name never reads as a finished file.
        }
    }
}
