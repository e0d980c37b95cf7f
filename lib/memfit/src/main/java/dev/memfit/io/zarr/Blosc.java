package dev.memfit.io.zarr;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdException;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * The Blosc 1 frame decoded in Java: numcodecs' default compressor, and so zarr-python 2's and anndata's.
 *
 * <p>The layout, as c-blosc's {@code README_CHUNK_FORMAT.rst} describes it and {@code blosc/blosc.c} reads it: a
 * 16-byte header (format version, the inner codec's format version, flags, the type size, then three little-endian
 * 32-bit sizes: decoded bytes, block size, encoded bytes including the header). Flag bit 0 says the blocks were
 * byte-shuffled, bit 1 that the data is stored as is after the header (memcpyed), bit 2 that the blocks were
 * bit-shuffled, bit 4 that blocks were not split, and bits 5-7 name the inner codec (0 blosclz, 1 lz4 or lz4hc,
 * 2 snappy, 3 zlib, 4 zstd). Then one little-endian 32-bit start per block (from the start of the frame), and at each
 * start the block's splits, each a 32-bit encoded length and the encoded bytes; a split whose encoded length equals
 * its decoded length is stored as is. A block is split into {@code typesize} equal streams unless flag bit 4 is set,
 * the type size is above 16, a block holds fewer than 128 elements, or it is the last, shorter block. Blocks are
 * unshuffled after decoding: byte shuffle groups the i-th bytes of every element; bit shuffle groups the i-th bits,
 * when the block holds a multiple of 8 elements (the rest of the block is left as is).
 */
final class Blosc implements Codec {

    /** The header's size, and what a memcpyed frame holds before its data. */
    static final int HEADER = 16;
    private static final int DO_SHUFFLE = 0x01;
    private static final int MEMCPYED = 0x02;
    private static final int DO_BITSHUFFLE = 0x04;
    private static final int RESERVED = 0x08;
    private static final int DONT_SPLIT = 0x10;
    private static final int MAX_SPLITS = 16;
    private static final int MIN_BUFFER = 128;
    private static final String[] INNER = {"blosclz", "lz4", "snappy", "zlib", "zstd"};

    private static final LZ4SafeDecompressor LZ4 = LZ4Factory.fastestInstance().safeDecompressor();
    private static final ThreadLocal<Inflater> INFLATER = ThreadLocal.withInitial(Inflater::new);
    private static final VarHandle INT_LE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final ThreadLocal<byte[][]> SCRATCH = ThreadLocal.withInitial(() -> new byte[1][0]);

    private final String description;

    /**
     * A decoder; the settings in {@code .zarray} only matter for writing, so they are kept for the description.
     *
     * @param cname the inner codec named in {@code .zarray}
     * @param shuffle 0 none, 1 byte, 2 bit, -1 automatic
     */
    Blosc(String cname, int shuffle) {
        this.description = "blosc(" + cname + ", " + switch (shuffle) {
            case 0 -> "noshuffle";
            case 1 -> "shuffle";
            case 2 -> "bitshuffle";
            default -> "autoshuffle";
        } + ")";
    }

    @Override
    public String describe() {
        return description;
    }

    @Override
    public long mostDecodedBytes(byte[] in) {
        return mostDecoded(in);
    }

    /** What a frame can decode to: its data as is when memcpyed, else its length times its inner codec's ratio. */
    private static long mostDecoded(byte[] in) {
        if (in.length < HEADER) {
            return 0;
        }
        int flags = in[2] & 0xff;
        if ((flags & MEMCPYED) != 0) {
            return in.length - HEADER;
        }
        long ratio = switch (flags >>> 5) {
            case 0, 1 -> LZ_RATIO;
            case 2 -> SNAPPY_RATIO;
            case 3 -> DEFLATE_RATIO;
            case 4 -> ZSTD_RATIO;
            default -> 1;
        };
        return in.length * ratio;
    }

    @Override
    public byte[] decode(byte[] in, int expected) {
        int nbytes = check(in, expected);
        byte[] out = new byte[nbytes];
        decodeFrame(in, nbytes, out);
        return out;
    }

    @Override
    public void decodeInto(byte[] in, int expected, byte[] out) {
        decodeFrame(in, check(in, expected), out);
    }

    /** Checks the header; returns the decoded size. */
    private static int check(byte[] in, int expected) {
        if (in.length < HEADER) {
            throw new Corrupt("a Blosc frame of " + in.length + " bytes, shorter than its 16-byte header");
        }
        int version = in[0] & 0xff;
        int flags = in[2] & 0xff;
        int nbytes = le32(in, 4);
        int cbytes = le32(in, 12);
        if (version < 1 || version > 2) {
            throw new Corrupt("Blosc format version " + version + " (memfit reads the Blosc 1 formats 1 and 2)");
        }
        if ((flags & RESERVED) != 0) {
            throw new Corrupt("Blosc flags 0x" + Integer.toHexString(flags) + " with the reserved bit 3 set");
        }
        if (cbytes < HEADER || cbytes > in.length || nbytes < 0) {
            throw new Corrupt("a Blosc header claiming " + cbytes + " encoded and " + nbytes + " decoded bytes in a frame of "
                    + in.length + " bytes");
        }
        if (expected >= 0 && nbytes != expected) {
            throw new Corrupt("a Blosc frame of " + nbytes + " decoded bytes where the chunk holds " + expected);
        }
        if (nbytes > mostDecoded(in)) {
            // checked before a buffer is sized by the claim (the chunk's size is unknown for strings)
            throw new Corrupt("a Blosc header claiming " + nbytes + " decoded bytes from " + in.length + " encoded bytes, more"
                    + " than its inner codec (" + ((flags >>> 5) < INNER.length ? INNER[flags >>> 5] : "?") + ") can give");
        }
        return nbytes;
    }

    /** Decodes a checked frame of {@code nbytes} decoded bytes into the first bytes of {@code out}. */
    private static void decodeFrame(byte[] in, int nbytes, byte[] out) {
        int flags = in[2] & 0xff;
        int typesize = in[3] & 0xff;
        int blocksize = le32(in, 8);
        int cbytes = le32(in, 12);
        if (nbytes == 0) {
            return;
        }
        if ((flags & MEMCPYED) != 0) {
            if (cbytes != nbytes + HEADER) {
                throw new Corrupt("a memcpyed Blosc frame of " + cbytes + " bytes for " + nbytes + " decoded bytes");
            }
            System.arraycopy(in, HEADER, out, 0, nbytes);
            return;
        }
        if (blocksize <= 0 || typesize == 0) {
            throw new Corrupt("a Blosc block size of " + blocksize + " and a type size of " + typesize);
        }
        int codec = flags >>> 5;
        if (codec >= INNER.length) {
            throw new Corrupt("Blosc inner codec " + codec + " (memfit reads blosclz, lz4, lz4hc, snappy, zlib and zstd)");
        }
        int blocks = nbytes / blocksize + (nbytes % blocksize > 0 ? 1 : 0);
        if (blocks > (cbytes - HEADER) / 4) {
            throw new Corrupt("a Blosc frame of " + cbytes + " bytes too short for the starts of its " + blocks + " blocks");
        }
        boolean shuffled = (flags & DO_SHUFFLE) != 0 && typesize > 1;
        boolean bitShuffled = (flags & DO_BITSHUFFLE) != 0;
        byte[] tmp = scratch(Math.min(blocksize, nbytes));
        for (int block = 0; block < blocks; block++) {
            int offset = block * blocksize;
            boolean last = block == blocks - 1 && nbytes % blocksize > 0;
            int size = last ? nbytes % blocksize : blocksize;
            boolean bits = bitShuffled && size >= typesize;
            boolean unshuffle = shuffled || bits;
            byte[] target = unshuffle ? tmp : out;
            int targetOffset = unshuffle ? 0 : offset;
            int splits = (flags & DONT_SPLIT) == 0 && typesize <= MAX_SPLITS && size / typesize >= MIN_BUFFER && !last
                    ? typesize : 1;
            int splitSize = size / splits;
            int position = le32(in, HEADER + 4 * block);
            for (int split = 0; split < splits; split++) {
                if (position < HEADER || position > cbytes - 4) {
                    throw new Corrupt("Blosc block " + block + " starting at byte " + position + " of a " + cbytes
                            + "-byte frame");
                }
                int encoded = le32(in, position);
                position += 4;
                if (encoded < 0 || encoded > cbytes - position) {
                    throw new Corrupt("Blosc block " + block + " claiming " + encoded + " encoded bytes at byte " + position);
                }
                int at = targetOffset + split * splitSize;
                if (encoded == splitSize) {
                    System.arraycopy(in, position, target, at, splitSize);
                } else {
                    int got = inner(codec, in, position, encoded, target, at, splitSize);
                    if (got != splitSize) {
                        throw new Corrupt(INNER[codec] + " stream of Blosc block " + block + " decoding to " + got
                                + " bytes where " + splitSize + " were expected");
                    }
                }
                position += encoded;
            }
            if (shuffled) {
                unshuffle(typesize, size, tmp, out, offset);
            } else if (bits) {
                bitUnshuffle(typesize, size, tmp, out, offset);
            }
        }
    }

    /** Decodes one split with the inner codec; returns the bytes written or -1. */
    private static int inner(int codec, byte[] in, int at, int length, byte[] out, int outAt, int outLength) {
        switch (codec) {
            case 0:
                return BloscLz.decode(in, at, length, out, outAt, outLength);
            case 1:
                try {
                    return LZ4.decompress(in, at, length, out, outAt, outLength);
                } catch (LZ4Exception e) {
                    return -1;
                }
            case 2:
                return Snappy.decode(in, at, length, out, outAt, outLength);
            case 3:
                Inflater inflater = INFLATER.get();
                inflater.reset();
                inflater.setInput(in, at, length);
                try {
                    int done = 0;
                    while (done < outLength) {
                        int n = inflater.inflate(out, outAt + done, outLength - done);
                        if (n == 0 && (inflater.finished() || inflater.needsInput() || inflater.needsDictionary())) {
                            break;
                        }
                        done += n;
                    }
                    return done;
                } catch (DataFormatException e) {
                    return -1;
                }
            default:
                try {
                    long n = Zstd.decompressByteArray(out, outAt, outLength, in, at, length);
                    return Zstd.isError(n) ? -1 : (int) n;
                } catch (ZstdException e) {
                    return -1;
                }
        }
    }

    /** Byte unshuffle: the shuffled block holds every element's byte 0, then every byte 1, and so on. */
    static void unshuffle(int typesize, int size, byte[] src, byte[] dest, int destOffset) {
        int elements = size / typesize;
        if (typesize == 4) {
            // one 4-byte store per element, reading the four byte streams in step: twice as fast as byte stores
            int s1 = elements;
            int s2 = 2 * elements;
            int s3 = 3 * elements;
            for (int i = 0; i < elements; i++) {
                int v = (src[i] & 0xff) | (src[s1 + i] & 0xff) << 8 | (src[s2 + i] & 0xff) << 16 | src[s3 + i] << 24;
                INT_LE.set(dest, destOffset + 4 * i, v);
            }
        } else if (typesize == 8) {
            for (int i = 0; i < elements; i++) {
                long v = 0;
                for (int j = 7; j >= 0; j--) {
                    v = v << 8 | (src[j * elements + i] & 0xff);
                }
                LONG_LE.set(dest, destOffset + 8 * i, v);
            }
        } else {
            unshuffleBytes(typesize, elements, src, dest, destOffset);
        }
        int rest = size - elements * typesize;
        System.arraycopy(src, elements * typesize, dest, destOffset + elements * typesize, rest);
    }

    private static void unshuffleBytes(int typesize, int elements, byte[] src, byte[] dest, int destOffset) {
        for (int j = 0; j < typesize; j++) {
            int from = j * elements;
            int to = destOffset + j;
            for (int i = 0; i < elements; i++) {
                dest[to] = src[from + i];
                to += typesize;
            }
        }
    }

    /**
     * Bit unshuffle: the shuffled block holds, for each bit of an element (bit 0 of byte 0 first), one row of
     * {@code elements / 8} bytes with that bit of every element, element 0 in the lowest bit of the row's first byte.
     * Blocks whose element count is not a multiple of 8 were left as they were, and so are the bytes after the last
     * whole element.
     */
    static void bitUnshuffle(int typesize, int size, byte[] src, byte[] dest, int destOffset) {
        int elements = size / typesize;
        if (elements % 8 != 0) {
            System.arraycopy(src, 0, dest, destOffset, size);
            return;
        }
        int whole = elements * typesize;
        java.util.Arrays.fill(dest, destOffset, destOffset + whole, (byte) 0);
        int rowBytes = elements / 8;
        for (int bit = 0; bit < 8 * typesize; bit++) {
            int row = bit * rowBytes;
            int byteInElement = bit >>> 3;
            int mask = 1 << (bit & 7);
            for (int i = 0; i < rowBytes; i++) {
                int v = src[row + i] & 0xff;
                if (v == 0) {
                    continue;
                }
                int base = destOffset + (i * 8) * typesize + byteInElement;
                for (int k = 0; k < 8; k++) {
                    if ((v & (1 << k)) != 0) {
                        dest[base + k * typesize] |= (byte) mask;
                    }
                }
            }
        }
        System.arraycopy(src, whole, dest, destOffset + whole, size - whole);
    }

    private static byte[] scratch(int size) {
        byte[][] holder = SCRATCH.get();
        if (holder[0].length < size) {
            holder[0] = new byte[size];
        }
        return holder[0];
    }

    static int le32(byte[] b, int at) {
        return (b[at] & 0xff) | (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff) << 16 | (b[at + 3] & 0xff) << 24;
    }
}
