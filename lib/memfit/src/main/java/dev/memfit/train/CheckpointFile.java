package dev.memfit.train;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.hdf5.Hdf5Writer;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.storage.TempFiles;
import io.jhdf.HdfFile;
import io.jhdf.api.Dataset;
import io.jhdf.api.Group;
import io.jhdf.api.Node;
import io.jhdf.api.dataset.ContiguousDataset;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * One checkpoint on disk: an HDF5 file that h5py reads, with the training state as a JSON string ({@code /state}),
 * every array of the model and its optimizer as a float32 dataset under {@code /arrays} (names with slashes become
 * groups, e.g. {@code /arrays/parameters/topicTerms}, {@code /arrays/adam/topicTerms/m}), and the loss of every step
 * ({@code /history/step_loss}, float64). Every dataset carries a CRC-32C of its bytes ({@code crc32c} attribute), so a
 * torn or corrupted file is detected when read back.
 *
 * <p>Written under a temporary name, flushed to the device, and renamed: a crash leaves the previous checkpoints and
 * at most a stray temporary file, never a half-written checkpoint under a checkpoint's name.
 */
final class CheckpointFile {

    static final String FORMAT = "memfit checkpoint";
    static final long VERSION = 1;
    private static final long PIECE_BYTES = 8L << 20;

    private CheckpointFile() {
    }

    /**
     * Writes a checkpoint.
     *
     * @param target the final path
     * @param stateJson the training state
     * @param arrays the model's and optimizer's arrays, float32, by name
     * @param stepLosses the loss of every step so far
     * @return the file's size in bytes
     */
    static long write(Path target, String stateJson, Map<String, NDArray> arrays, double[] stepLosses) {
        Path temporary = TempFiles.beside(target);
        boolean done = false;
        try {
            try (Hdf5Writer writer = Hdf5Writer.create(temporary)) {
                Hdf5Writer.Group root = writer.root().attribute("format", FORMAT).attribute("version", VERSION);
                root.dataset("state", new String[]{stateJson}).attribute("crc32c", crc(stateJson));
                Hdf5Writer.Group arraysGroup = root.group("arrays");
                Map<String, Hdf5Writer.Group> groups = new LinkedHashMap<>();
                for (Map.Entry<String, NDArray> entry : arrays.entrySet()) {
                    String name = entry.getKey();
                    int slash = name.lastIndexOf('/');
                    Hdf5Writer.Group parent = slash < 0 ? arraysGroup : group(arraysGroup, groups, name.substring(0, slash));
                    writeArray(parent, name.substring(slash + 1), name, entry.getValue());
                }
                ByteBuffer losses = ByteBuffer.allocate(stepLosses.length * Double.BYTES).order(ByteOrder.LITTLE_ENDIAN);
                losses.asDoubleBuffer().put(stepLosses);
                root.group("history").dataset("step_loss", stepLosses).attribute("crc32c", crc(losses));
            }
            try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.WRITE)) {
                channel.force(true); // on the device before the rename makes it the newest checkpoint
            }
            long bytes = Files.size(temporary);
            AtomicMove.replace(temporary, target);
            done = true;
            return bytes;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write checkpoint " + target, e);
        } finally {
            if (!done) {
                try {
                    Files.deleteIfExists(temporary);
                } catch (IOException ignored) {
                    // the write already failed; a stray temporary file is named as one and skipped
                }
            }
        }
    }

    private static Hdf5Writer.Group group(Hdf5Writer.Group arrays, Map<String, Hdf5Writer.Group> groups, String path) {
        Hdf5Writer.Group existing = groups.get(path);
        if (existing != null) {
            return existing;
        }
        int slash = path.lastIndexOf('/');
        Hdf5Writer.Group parent = slash < 0 ? arrays : group(arrays, groups, path.substring(0, slash));
        Hdf5Writer.Group created = parent.group(path.substring(slash + 1));
        groups.put(path, created);
        return created;
    }

    /** Streams an array to the file in pieces of whole rows, so a large parameter is never copied whole. */
    private static void writeArray(Hdf5Writer.Group parent, String leaf, String name, NDArray array) {
        if (array.getDataType() != DataType.FLOAT32) {
            throw new IllegalArgumentException("checkpoint array " + name + " is " + array.getDataType() + ", not float32");
        }
        Shape shape = array.getShape();
        CRC32C crc = new CRC32C();
        Hdf5Writer.Stream stream = parent.stream(leaf, DType.FLOAT32);
        long rows = shape.dimension() == 0 ? 1 : shape.get(0);
        long rowBytes = rows == 0 ? 0 : shape.size() * Float.BYTES / rows;
        long piece = Math.max(1, PIECE_BYTES / Math.max(1, rowBytes));
        try (NDManager scratch = array.getManager().newSubManager()) {
            if (shape.dimension() == 0 || rows <= piece) {
                append(stream, crc, array.toByteBuffer());
            } else {
                for (long start = 0; start < rows; start += piece) {
                    NDArray part = array.get(new NDIndex(start + ":" + Math.min(rows, start + piece)));
                    part.attach(scratch);
                    append(stream, crc, part.toByteBuffer());
                    part.close();
                }
            }
        }
        stream.finish(shape.getShape()).attribute("crc32c", crc.getValue());
    }

    private static void append(Hdf5Writer.Stream stream, CRC32C crc, ByteBuffer values) {
        values.order(ByteOrder.LITTLE_ENDIAN);
        crc.update(values.duplicate());
        stream.append(values);
    }

    private static long crc(String text) {
        return crc(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
    }

    private static long crc(ByteBuffer bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes.duplicate());
        return crc.getValue();
    }

    /**
     * Reads a checkpoint and checks every checksum before anything is handed out.
     *
     * @param file the checkpoint
     * @return its contents, mapped; close to unmap
     * @throws InvalidFileException when the file is not a whole, intact checkpoint
     */
    static Contents read(Path file) {
        Arena arena = Arena.ofShared();
        try (HdfFile hdf = new HdfFile(file); FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            if (!FORMAT.equals(hdf.getAttribute("format") == null ? null : hdf.getAttribute("format").getData())) {
                throw new InvalidFileException(file, 0, "a " + FORMAT + " (attribute format)", "another HDF5 file");
            }
            MemorySegment mapped = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
            Dataset stateSet = hdf.getDatasetByPath("state");
            String state = ((String[]) stateSet.getData())[0];
            check(file, stateSet, crc(state));
            Map<String, Array> arrays = new LinkedHashMap<>();
            collect(file, hdf, mapped, (Group) hdf.getChild("arrays"), "", arrays);
            Dataset lossSet = hdf.getDatasetByPath("history/step_loss");
            double[] losses = lossSet.isEmpty() ? new double[0] : (double[]) lossSet.getData();
            ByteBuffer lossBytes = ByteBuffer.allocate(losses.length * Double.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            lossBytes.asDoubleBuffer().put(losses);
            check(file, lossSet, crc(lossBytes));
            return new Contents(file, state, arrays, losses, arena);
        } catch (InvalidFileException e) {
            arena.close();
            throw e;
        } catch (IOException | RuntimeException e) {
            arena.close();
            // jhdf reports a torn file as any of several runtime errors: all mean the same to a caller
            throw new InvalidFileException(file, -1, "a whole " + FORMAT, "an unreadable file (" + e + ")", e);
        }
    }

    private static void collect(Path file, HdfFile hdf, MemorySegment mapped, Group group, String prefix,
                                Map<String, Array> into) {
        for (Node node : group.getChildren().values()) {
            String name = prefix + node.getName();
            if (node instanceof Group child) {
                collect(file, hdf, mapped, child, name + "/", into);
                continue;
            }
            Dataset dataset = (Dataset) node;
            long[] shape = dataset.getDimensionsAsLong();
            long bytes = dataset.getSize() * Float.BYTES;
            MemorySegment values = MemorySegment.NULL;
            if (bytes > 0) {
                if (!(dataset instanceof ContiguousDataset contiguous) || dataset.getDataType().getSize() != Float.BYTES) {
                    throw new InvalidFileException(file, -1, dataset.getPath() + " as contiguous float32", "another layout");
                }
                long address = hdf.getUserBlockSize() + contiguous.getDataAddress();
                if (address < 0 || address + bytes > mapped.byteSize()) {
                    throw new InvalidFileException(file, address, dataset.getPath() + " (" + bytes + " bytes) inside the file",
                            "data past the end of the " + mapped.byteSize() + "-byte file");
                }
                values = mapped.asSlice(address, bytes);
            }
            CRC32C crc = new CRC32C();
            crc.update(values.asByteBuffer());
            check(file, dataset, crc.getValue());
            into.put(name, new Array(shape, values));
        }
    }

    private static void check(Path file, Dataset dataset, long actual) {
        Object stored = dataset.getAttribute("crc32c") == null ? null : dataset.getAttribute("crc32c").getData();
        if (!(stored instanceof Number expected) || expected.longValue() != actual) {
            throw new InvalidFileException(file, -1, dataset.getPath() + " with CRC-32C " + stored,
                    String.format("CRC-32C %d: the checkpoint is corrupt", actual));
        }
    }

    /**
     * A verified array of a checkpoint.
     *
     * @param shape its shape
     * @param values its float32 values, little-endian, in the mapped file
     */
    record Array(long[] shape, MemorySegment values) {

        /**
         * Gives an array of the same shape these values. On the CPU, DJL's {@code set(ByteBuffer)} makes the tensor
         * use the buffer itself as its storage, so the values are first copied out of the mapping (which is unmapped
         * when the checkpoint closes) into a buffer of their own.
         */
        void copyInto(String name, NDArray target, Path file) {
            if (!new Shape(shape).equals(target.getShape())) {
                throw new InvalidFileException(file, -1, name + " of shape " + target.getShape() + " (the model as built now)",
                        "shape " + new Shape(shape) + ": the checkpoint is of another model");
            }
            ByteBuffer owned = ByteBuffer.allocateDirect(Math.toIntExact(values.byteSize())).order(ByteOrder.nativeOrder());
            MemorySegment.ofBuffer(owned).copyFrom(values);
            target.set(owned);
        }
    }

    /**
     * A checkpoint read back and verified; its arrays are mapped until {@link #close()}.
     *
     * @param file where it was read from
     * @param state the training state (JSON)
     * @param arrays the arrays by name
     * @param stepLosses the loss of every step up to the checkpoint
     * @param arena the mapping's lifetime
     */
    record Contents(Path file, String state, Map<String, Array> arrays, double[] stepLosses, Arena arena)
            implements AutoCloseable {

        @Override
        public void close() {
            arena.close();
        }
    }
}
