package dev.memfit.io.mrc;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
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
 * MrcHeader header = Mrc.readHeader(Path.of("particles.mrcs"));
 * try (Storage storage = Storage.local(); Arena arena = Arena.ofConfined()) {
 *     MemorySegment images = arena.allocate(10 * header.imagePixels() * Float.BYTES);
 *     Mrc.readImages(storage, path, header, 0, 10, images);   // float32, native byte order
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
     * Reads consecutive images as float32 in the platform's byte order, converting from the file's mode.
     *
     * @param storage where the bytes come from
     * @param file the file
     * @param header its header
     * @param first the first image
     * @param count how many images
     * @param into at least {@code count * imagePixels() * 4} bytes, also used to stage the raw bytes
     */
    public static void readImages(Storage storage, Path file, MrcHeader header, long first, int count, MemorySegment into) {
        if (first < 0 || count < 0 || first + count > header.nz()) {
            throw new InvalidFileException(file, -1, "images in [0, " + header.nz() + ")",
                    "a request for images [" + first + ", " + (first + count) + ")");
        }
        long pixels = header.imagePixels() * count;
        long staging = DType.stagingOffset(pixels, header.dtype(), DType.FLOAT32);
        storage.read(file, header.imageOffset(first), into.asSlice(staging, pixels * header.dtype().byteSize()));
        DType.convertInPlace(into, pixels, header.dtype(), header.byteOrder(), DType.FLOAT32);
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
