package dev.memfit.io.mrc;

import dev.memfit.io.storage.Storage;
import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Reads and writes MRC2014 files: cryo-EM image stacks ({@code .mrcs}) and volumes ({@code .mrc}).
 *
 * <pre>{@code
 * try (MrcReader reader = Mrc.open(Path.of("particles.mrcs")); Arena arena = Arena.ofConfined()) {
 *     MemorySegment images = arena.allocate(10 * reader.header().imagePixels() * Float.BYTES);
 *     reader.readImages(0, 10, images);   // float32, native byte order
 * }
 * }</pre>
 */
public final class Mrc {

    private Mrc() {
    }

    /**
     * Reads and validates a header, including that the image count agrees with the file size.
     *
     * @param file the file
     * @return the header
     */
    public static MrcHeader readHeader(Path file) {
        if (java.nio.file.Files.isDirectory(file)) {
            throw new MemfitException(file + ": expected an MRC file (.mrcs or .mrc), found a folder");
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer bytes = ByteBuffer.allocate((int) Math.min(MrcHeader.HEADER_BYTES, channel.size()));
            while (bytes.hasRemaining() && channel.read(bytes, bytes.position()) >= 0) {
                // read until full or end of file
            }
            bytes.flip();
            return MrcHeader.decode(file, bytes, channel.size());
        } catch (NoSuchFileException e) {
            throw new MemfitException(file + ": no such file", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /**
     * Reads and validates a header through a storage, such as an object cache over a bucket (paths in the form
     * {@code s3:/bucket/key}): only the header's bytes are read.
     *
     * @param file the file or object
     * @param storage where the bytes come from
     * @return the header
     */
    public static MrcHeader readHeader(Path file, Storage storage) {
        long size = storage.size(file);
        int length = (int) Math.min(MrcHeader.HEADER_BYTES, size);
        byte[] bytes = new byte[length];
        if (length > 0) {
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                MemorySegment into = arena.allocate(length);
                storage.read(file, 0, into);
                MemorySegment.copy(into, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, bytes, 0, length);
            }
        }
        return MrcHeader.decode(file, ByteBuffer.wrap(bytes), size);
    }

    /**
     * Opens a file for reading images, with positional reads of its own (closed with the reader).
     *
     * @param file the {@code .mrcs} or {@code .mrc}
     * @return the reader, to be closed
     */
    public static MrcReader open(Path file) {
        return new MrcReader(file, readHeader(file), Storage.local(), true);
    }

    /**
     * Opens a file for reading images through a storage (left open when the reader closes, so that one storage
     * can serve many files).
     *
     * @param file the {@code .mrcs} or {@code .mrc}
     * @param storage where the bytes come from
     * @return the reader, to be closed
     */
    public static MrcReader open(Path file, Storage storage) {
        return new MrcReader(file, readHeader(file), storage, false);
    }

    /**
     * Creates a stack to be filled image by image; see {@link MrcWriter}.
     *
     * @param file the final path
     * @param header the shape, mode and voxel size
     * @return the writer, to be committed and closed
     */
    public static MrcWriter create(Path file, MrcHeader header) {
        return new MrcWriter(file, header);
    }

    /**
     * Writes a whole stack of float32 images.
     *
     * @param file the final path
     * @param header the shape, mode and voxel size
     * @param images {@code nz * ny * nx} float32 values in the platform's byte order
     * @return the path written
     */
    public static Path write(Path file, MrcHeader header, MemorySegment images) {
        try (MrcWriter writer = create(file, header)) {
            writer.writeImages(0, images);
            return writer.commit();
        }
    }

    /**
     * Whether a file's extension says MRC.
     *
     * @param file any path
     * @return true for {@code .mrc} and {@code .mrcs}
     */
    public static boolean hasMrcExtension(Path file) {
        String name = file.getFileName().toString().toLowerCase(java.util.Locale.ROOT);
        return name.endsWith(".mrcs") || name.endsWith(".mrc");
    }

}
