package dev.memfit.io.mrc;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The 1024-byte header of an MRC2014 file ({@code .mrc} volume or {@code .mrcs} image stack).
 *
 * <p>Images are {@code nx} x {@code ny} pixels with x fastest, so image {@code z} is the C-order array
 * {@code [ny][nx]} at {@link #imageOffset(long)}. Supported modes: 0 (int8), 1 (int16), 2 (float32), 6 (uint16) and
 * 12 (float16). The byte order comes from the machine stamp; an extended header of {@code nsymbt} bytes is skipped.
 *
 * @param nx columns (pixels per row)
 * @param ny rows
 * @param nz sections: the number of images in a stack
 * @param dtype the element type of the mode
 * @param byteOrder the byte order of the header and data
 * @param extendedHeaderBytes the size of the extended header ({@code NSYMBT})
 * @param voxelSize the pixel size in Angstrom along x ({@code CELLA.x / MX}), 0 when unset
 */
public record MrcHeader(int nx, int ny, long nz, DType dtype, ByteOrder byteOrder, long extendedHeaderBytes,
                        double voxelSize) {

    /** The size of the main header. */
    public static final int HEADER_BYTES = 1024;

    /**
     * Starts describing a new little-endian image stack: {@code setWidth}, {@code setHeight} and {@code setImages}
     * are required; defaults are float32 (mode 2) and a voxel size of 1 Angstrom.
     *
     * <pre>{@code
     * MrcHeader header = MrcHeader.builder().setWidth(64).setHeight(64).setImages(1_000)
     *         .optDType(DType.FLOAT16).optVoxelSize(1.5).build();
     * }</pre>
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Describes a new image stack; {@link #build()} validates the settings. */
    public static final class Builder {

        private int nx;
        private int ny;
        private long images = -1;
        private DType dtype = DType.FLOAT32;
        private double voxelSize = 1;

        private Builder() {
        }

        /**
         * Sets the number of pixels per row, NX (required).
         *
         * @param pixels at least 1
         * @return this builder
         */
        public Builder setWidth(int pixels) {
            this.nx = pixels;
            return this;
        }

        /**
         * Sets the number of rows per image, NY (required).
         *
         * @param rows at least 1
         * @return this builder
         */
        public Builder setHeight(int rows) {
            this.ny = rows;
            return this;
        }

        /**
         * Sets the number of images, NZ (required).
         *
         * @param count from 0 to 2^31 - 1
         * @return this builder
         */
        public Builder setImages(long count) {
            this.images = count;
            return this;
        }

        /**
         * Sets the element type (default float32).
         *
         * @param type INT8, INT16, FLOAT32, UINT16 or FLOAT16 (modes 0, 1, 2, 6, 12)
         * @return this builder
         */
        public Builder optDType(DType type) {
            this.dtype = type;
            return this;
        }

        /**
         * Sets the pixel size (default 1 Angstrom).
         *
         * @param angstrom at least 0 (0: unset)
         * @return this builder
         */
        public Builder optVoxelSize(double angstrom) {
            this.voxelSize = angstrom;
            return this;
        }

        /**
         * Validates the settings and makes the header.
         *
         * @return the header
         * @throws MemfitException naming the setting to change
         */
        public MrcHeader build() {
            if (nx < 1 || ny < 1) {
                throw new MemfitException("setWidth(pixels) and setHeight(rows) are required and must be positive, got "
                        + nx + "x" + ny);
            }
            if (images < 0 || images > Integer.MAX_VALUE) {
                throw new MemfitException("setImages(n) is required, with n from 0 to 2^31 - 1 (NZ is a 32-bit field), got "
                        + images);
            }
            if (dtype == null) {
                throw new MemfitException("optDType(null): MRC needs INT8, INT16, FLOAT32, UINT16 or FLOAT16");
            }
            if (!(voxelSize >= 0)) {
                throw new MemfitException("optVoxelSize needs a size >= 0 Angstrom, got " + voxelSize);
            }
            try {
                mode(dtype);
            } catch (IllegalArgumentException e) {
                throw new MemfitException(e.getMessage(), e);
            }
            try {
                Math.multiplyExact(Math.multiplyExact(Math.multiplyExact((long) nx, ny), dtype.byteSize()), images);
            } catch (ArithmeticException e) {
                throw new MemfitException("setWidth(" + nx + "), setHeight(" + ny + ") and setImages(" + images
                        + ") of " + dtype + " make more than 2^63 bytes; use fewer or smaller images");
            }
            return new MrcHeader(nx, ny, images, dtype, ByteOrder.LITTLE_ENDIAN, 0, voxelSize);
        }
    }

    /**
     * The MRC mode number of an element type.
     *
     * @param dtype the type
     * @return 0, 1, 2, 6 or 12
     */
    public static int mode(DType dtype) {
        return switch (dtype) {
            case INT8 -> 0;
            case INT16 -> 1;
            case FLOAT32 -> 2;
            case UINT16 -> 6;
            case FLOAT16 -> 12;
            default -> throw new IllegalArgumentException("MRC has no mode for " + dtype
                    + "; use INT8, INT16, FLOAT32, UINT16 or FLOAT16");
        };
    }

    private static DType dtypeOfMode(int mode) {
        return switch (mode) {
            case 0 -> DType.INT8;
            case 1 -> DType.INT16;
            case 2 -> DType.FLOAT32;
            case 6 -> DType.UINT16;
            case 12 -> DType.FLOAT16;
            default -> null;
        };
    }

    /**
     * Pixels per image.
     *
     * @return nx times ny
     */
    public long imagePixels() {
        return Math.multiplyExact((long) nx, ny);
    }

    /**
     * Bytes per image in the file.
     *
     * @return pixels times element size
     */
    public long imageBytes() {
        return Math.multiplyExact(imagePixels(), dtype.byteSize());
    }

    /**
     * The offset of the first data byte: 1024 plus the extended header.
     *
     * @return the data offset
     */
    public long dataOffset() {
        return HEADER_BYTES + extendedHeaderBytes;
    }

    /**
     * The file offset of an image.
     *
     * @param image the image (section) index from 0
     * @return the byte offset
     */
    public long imageOffset(long image) {
        return Math.addExact(dataOffset(), Math.multiplyExact(image, imageBytes()));
    }

    /**
     * The size the file must have.
     *
     * @return data offset plus all images
     */
    public long fileBytes() {
        return Math.addExact(dataOffset(), Math.multiplyExact(nz, imageBytes()));
    }

    /**
     * Parses and validates a header.
     *
     * @param file the file, for messages
     * @param bytes the first 1024 bytes (or fewer when the file is shorter)
     * @param fileSize the file's size, to check the image count against
     * @return the header
     * @throws InvalidFileException when the header is not a supported MRC header or disagrees with the size
     */
    public static MrcHeader decode(Path file, ByteBuffer bytes, long fileSize) {
        if (bytes.remaining() < HEADER_BYTES) {
            throw new InvalidFileException(file, 0, "an MRC header of 1024 bytes", "a file of " + fileSize + " bytes");
        }
        ByteOrder order = stampOrder(bytes);
        if (order == null) {
            order = plausible(bytes, ByteOrder.LITTLE_ENDIAN) ? ByteOrder.LITTLE_ENDIAN
                    : plausible(bytes, ByteOrder.BIG_ENDIAN) ? ByteOrder.BIG_ENDIAN : null;
        }
        ByteBuffer in = bytes.duplicate().order(order == null ? ByteOrder.LITTLE_ENDIAN : order);
        int nx = in.getInt(0);
        int ny = in.getInt(4);
        int nz = in.getInt(8);
        int mode = in.getInt(12);
        if (order == null || nx <= 0 || ny <= 0 || nz < 0) {
            throw new InvalidFileException(file, 0, "an MRC header (positive NX, NY, NZ and a machine stamp)",
                    "NX=" + nx + " NY=" + ny + " NZ=" + nz + " in either byte order");
        }
        DType dtype = dtypeOfMode(mode);
        if (dtype == null) {
            throw new InvalidFileException(file, 12, "MRC mode 0, 1, 2, 6 or 12", "mode " + mode);
        }
        int mx = in.getInt(28);
        float cellX = in.getFloat(40);
        long nsymbt = Integer.toUnsignedLong(in.getInt(92));
        // Sizes with checked arithmetic, compared with the file before anyone allocates or maps by them: a crafted
        // NX = NY = 2^30 must not wrap around to a size that matches a 1 KiB file.
        long available = fileSize - HEADER_BYTES - nsymbt;
        String shape = nz + " images of " + nx + "x" + ny + " " + dtype.numpyCode();
        long dataBytes;
        try {
            dataBytes = Math.multiplyExact(Math.multiplyExact(Math.multiplyExact((long) nx, ny), dtype.byteSize()), nz);
            Math.addExact(HEADER_BYTES + nsymbt, dataBytes);
        } catch (ArithmeticException e) {
            throw new InvalidFileException(file, 0, "a header whose sizes fit in a file (NX*NY*NZ*bytes per pixel "
                    + "below 2^63)", "NX=" + nx + " NY=" + ny + " NZ=" + nz + " mode " + mode + ": " + shape
                    + " is more than 2^63 bytes of data, the file has " + String.format("%,d", Math.max(0, available))
                    + " bytes after the header");
        }
        if (available < 0) {
            throw new InvalidFileException(file, 92, "an extended header (NSYMBT) that fits in the file",
                    "NSYMBT=" + nsymbt + " in a file of " + fileSize + " bytes");
        }
        MrcHeader header = new MrcHeader(nx, ny, nz, dtype, order, nsymbt, mx > 0 ? cellX / mx : 0);
        if (available != dataBytes) {
            long imageBytes = header.imageBytes();
            throw new InvalidFileException(file, header.dataOffset(),
                    shape + " (" + header.fileBytes() + " bytes in all, with " + nsymbt + " bytes of extended header)",
                    fileSize + " bytes" + (available % imageBytes == 0
                            ? ", room for " + available / imageBytes + " images" : "")
                            + (available < dataBytes ? " (truncated?)" : ""));
        }
        return header;
    }

    private static ByteOrder stampOrder(ByteBuffer bytes) {
        int first = Byte.toUnsignedInt(bytes.get(212));
        if (first == 0x44 || first == 0x41) {
            return ByteOrder.LITTLE_ENDIAN;
        }
        if (first == 0x11) {
            return ByteOrder.BIG_ENDIAN;
        }
        return null;
    }

    /** Without a valid stamp (old writers), the byte order whose mode and sizes make sense wins. */
    private static boolean plausible(ByteBuffer bytes, ByteOrder order) {
        ByteBuffer in = bytes.duplicate().order(order);
        int mode = in.getInt(12);
        return dtypeOfMode(mode) != null && in.getInt(0) > 0 && in.getInt(0) < (1 << 20)
                && in.getInt(4) > 0 && in.getInt(4) < (1 << 20) && in.getInt(8) >= 0;
    }

    /**
     * The header as written by memfit: an image stack (ISPG 0, MZ 1), machine stamp, "MAP ", NVERSION 20140 and
     * the data statistics.
     *
     * @param min the smallest value
     * @param max the largest value
     * @param mean the mean value
     * @param rms the root-mean-square deviation from the mean
     * @return 1024 bytes
     */
    public byte[] encode(float min, float max, float mean, float rms) {
        ByteBuffer out = ByteBuffer.allocate(HEADER_BYTES).order(byteOrder);
        out.putInt(0, nx).putInt(4, ny).putInt(8, Math.toIntExact(nz)).putInt(12, mode(dtype));
        out.putInt(28, nx).putInt(32, ny).putInt(36, 1);
        out.putFloat(40, (float) (voxelSize * nx)).putFloat(44, (float) (voxelSize * ny)).putFloat(48, (float) voxelSize);
        out.putFloat(52, 90f).putFloat(56, 90f).putFloat(60, 90f);
        out.putInt(64, 1).putInt(68, 2).putInt(72, 3);
        out.putFloat(76, min).putFloat(80, max).putFloat(84, mean);
        out.putInt(88, 0).putInt(92, Math.toIntExact(extendedHeaderBytes));
        out.putInt(108, 20140);
        out.put(208, "MAP ".getBytes(StandardCharsets.US_ASCII));
        byte stamp = byteOrder == ByteOrder.LITTLE_ENDIAN ? (byte) 0x44 : (byte) 0x11;
        out.put(212, stamp).put(213, stamp);
        out.putFloat(216, rms);
        out.putInt(220, 1);
        out.put(224, "memfit".getBytes(StandardCharsets.US_ASCII));
        return out.array();
    }
}
