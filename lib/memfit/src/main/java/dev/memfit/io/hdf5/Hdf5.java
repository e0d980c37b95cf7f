package dev.memfit.io.hdf5;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import io.jhdf.object.datatype.ArrayDataType;
import io.jhdf.object.datatype.BitField;
import io.jhdf.object.datatype.CompoundDataType;
import io.jhdf.object.datatype.DataType;
import io.jhdf.object.datatype.EnumDataType;
import io.jhdf.object.datatype.FixedPoint;
import io.jhdf.object.datatype.FloatingPoint;
import io.jhdf.object.datatype.OpaqueDataType;
import io.jhdf.object.datatype.Reference;
import io.jhdf.object.datatype.StringData;
import io.jhdf.object.datatype.TimeDataType;
import io.jhdf.object.datatype.VariableLength;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collection;
import java.util.function.Supplier;

/** What every HDF5 file shares, for the writer that makes them and the code that recognises them. */
public final class Hdf5 {

    private static final byte[] SIGNATURE = {(byte) 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

    private Hdf5() {
    }

    /**
     * The format signature at the start of the superblock.
     *
     * @return a copy of the 8 bytes
     */
    public static byte[] signature() {
        return SIGNATURE.clone();
    }

    /**
     * Whether a file starts with the HDF5 signature (at offset 0: files written by h5py, anndata and memfit have no
     * user block).
     *
     * @param file the file
     * @return true for an HDF5 file
     */
    public static boolean looksLikeHdf5(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            return Arrays.equals(in.readNBytes(SIGNATURE.length), SIGNATURE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /**
     * A datatype as a person names it: numpy's name for numbers ({@code float16}, {@code uint8}), {@code bool} for
     * h5py's boolean enum, {@code string}, {@code enum {A, B}}, {@code compound}, ... (jhdf's own
     * {@code toString()} is {@code FloatingPoint@255b53dc}).
     *
     * @param type a jhdf datatype
     * @return a short readable name
     */
    static String typeName(DataType type) {
        int bits = type.getSize() * 8;
        return switch (type) {
            case FloatingPoint ignored -> "float" + bits;
            case FixedPoint fixed -> (fixed.isSigned() ? "int" : "uint") + bits;
            case EnumDataType enumeration -> {
                Collection<String> names = enumeration.getEnumMapping().values();
                yield names.size() == 2 && names.contains("FALSE") && names.contains("TRUE") ? "bool"
                        : "enum " + names;
            }
            case StringData ignored -> "fixed-length string (" + type.getSize() + " bytes)";
            case VariableLength ignored -> "variable-length string or sequence";
            case CompoundDataType ignored -> "compound (a struct of " + type.getSize() + " bytes)";
            case ArrayDataType ignored -> "array";
            case BitField ignored -> "bitfield (" + bits + " bits)";
            case OpaqueDataType ignored -> "opaque (" + type.getSize() + " bytes)";
            case Reference ignored -> "object reference";
            case TimeDataType ignored -> "time";
            default -> type.getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT);
        };
    }

    /**
     * Opens an HDF5 file for jhdf over a read-only mapping of it, where it fits one buffer (under 2 GiB): jhdf then
     * reads structures (object headers, heaps, chunk indexes) as slices of the mapping, so a size a damaged header
     * claims costs nothing and a claim past the end fails at once, where jhdf's own file reader allocates a buffer of
     * the claimed size first (tens of MB for a 43 KB file, or an out-of-memory error). Larger files are read through
     * jhdf's file channel.
     *
     * @param file the file
     * @return jhdf's view of it, to be closed
     * @throws IOException when it cannot be mapped
     */
    static io.jhdf.HdfFile open(Path file) throws IOException {
        try (java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(file,
                java.nio.file.StandardOpenOption.READ)) {
            long size = channel.size();
            if (size > Integer.MAX_VALUE - 8) {
                return new io.jhdf.HdfFile(file);
            }
            return io.jhdf.HdfFile.fromByteBuffer(channel.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, 0, size));
        }
    }

    /**
     * The bytes a dataset claims: its elements (the product of its dimensions) times its element size, from the
     * header alone; {@link Long#MAX_VALUE} when that overflows.
     *
     * @param dataset a jhdf dataset
     * @return bytes
     */
    static long claimedBytes(io.jhdf.api.Dataset dataset) {
        long bytes = dataset.getDataType().getSize();
        for (long dimension : dataset.getDimensionsAsLong()) {
            if (dimension < 0 || dimension != 0 && bytes > Long.MAX_VALUE / dimension) {
                return Long.MAX_VALUE;
            }
            bytes *= dimension;
        }
        return bytes;
    }

    /**
     * Runs a read through jhdf, turning what jhdf throws on a damaged file (its {@code HdfException}s, and the
     * buffer or index errors a truncated structure gives) into an {@link InvalidFileException} naming the file and
     * the node; memfit's own exceptions pass through unchanged.
     *
     * @param file the file read
     * @param node the HDF5 path of the node read, such as {@code /obs/cell_type}
     * @param read the read
     * @param <T> what it returns
     * @return what it returned
     */
    static <T> T read(Path file, String node, Supplier<T> read) {
        try {
            return read.get();
        } catch (MemfitException e) {
            throw e;
        } catch (RuntimeException e) {
            throw unreadable(file, node, e);
        }
    }

    /**
     * The exception for a node jhdf could not read.
     *
     * @param file the file
     * @param node the HDF5 path
     * @param cause what jhdf threw
     * @return an exception naming both, saying the file is probably truncated or damaged
     */
    static InvalidFileException unreadable(Path file, String node, RuntimeException cause) {
        return new InvalidFileException(file, -1, "a readable HDF5 node " + node, "one jhdf cannot read (" + reason(cause)
                + "); the file is probably truncated or damaged: copy or write it again", cause);
    }

    /**
     * What to throw when jhdf's writer fails: its {@code HdfWritingException("Exception writing")} carries the I/O
     * error that matters (a full disk, a read-only folder), which is rethrown naming the output; memfit's own
     * exceptions pass through.
     *
     * @param output the file being written
     * @param error what was thrown while writing it
     * @return the exception to throw
     */
    static RuntimeException writeFailure(Path output, RuntimeException error) {
        if (error instanceof MemfitException || !(error instanceof io.jhdf.exceptions.HdfException)) {
            return error;
        }
        for (Throwable t = error.getCause(); t != null && t != t.getCause(); t = t.getCause()) {
            if (t instanceof IOException io) {
                return new UncheckedIOException("cannot write " + output, io);
            }
        }
        return new MemfitException("cannot write " + output + ": " + reason(error), error);
    }

    /** The messages of an exception and its causes, without class names (which read as a crash). */
    static String reason(Throwable error) {
        StringBuilder text = new StringBuilder();
        for (Throwable t = error; t != null && t != t.getCause(); t = t.getCause()) {
            String message = t.getMessage();
            if (message == null || message.isBlank()) {
                message = words(t.getClass().getSimpleName());
            }
            if (t.getCause() != null && message.equals(t.getCause().toString())) {
                continue; // a wrapper that only repeats its cause
            }
            if (!text.toString().contains(message)) {
                text.append(text.isEmpty() ? "" : ": ").append(message);
            }
        }
        return text.toString();
    }

    /** {@code BufferUnderflowException} as "buffer underflow". */
    private static String words(String className) {
        String name = className.replaceAll("(Exception|Error)$", "");
        return name.replaceAll("([a-z])([A-Z])", "$1 $2").toLowerCase(java.util.Locale.ROOT);
    }
}
