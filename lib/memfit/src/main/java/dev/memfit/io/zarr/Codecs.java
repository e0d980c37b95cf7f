package dev.memfit.io.zarr;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdException;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.DataFormatException;
import java.util.zip.GZIPInputStream;
import java.util.zip.Inflater;

/**
 * The numcodecs compressors memfit decodes, made from their {@code .zarray} configuration, and the {@code vlen-utf8}
 * object codec anndata writes strings with.
 */
final class Codecs {

    /** The compressors memfit decodes, for messages. */
    static final String SUPPORTED = "blosc (blosclz, lz4, lz4hc, snappy, zlib, zstd), zlib, gzip, zstd, lz4 or none";

    private Codecs() {
    }

    /**
     * The compressor a {@code .zarray} names.
     *
     * @param config the {@code compressor} object (not null)
     * @return the codec, or null when its id is not one memfit decodes (the caller names the store and key)
     */
    static Codec compressor(JsonNode config) {
        String id = config.path("id").asText("");
        return switch (id) {
            case "blosc" -> {
                String cname = config.path("cname").asText("?");
                if (!Arrays.asList("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd").contains(cname)) {
                    yield null;
                }
                yield new Blosc(cname, config.path("shuffle").asInt(1));
            }
            case "zlib" -> new Zlib();
            case "gzip" -> new Gzip();
            case "zstd" -> new ZstdCodec();
            case "lz4" -> new Lz4();
            default -> null;
        };
    }

    /** numcodecs' {@code zlib}: one zlib stream (RFC 1950). */
    static final class Zlib implements Codec {
        private static final ThreadLocal<Inflater> INFLATER = ThreadLocal.withInitial(Inflater::new);

        @Override
        public byte[] decode(byte[] in, int expected) {
            if (expected >= 0) {
                // the size is known: one call to libdeflate where the system has it
                try {
                    return dev.memfit.io.codec.Zlib.inflate(java.lang.foreign.MemorySegment.ofArray(in), expected);
                } catch (DataFormatException e) {
                    throw new Corrupt("a zlib stream that does not decode to the chunk's " + expected + " bytes ("
                            + e.getMessage() + ")", e);
                }
            }
            Inflater inflater = INFLATER.get();
            inflater.reset();
            inflater.setInput(in);
            byte[] out = new byte[expected >= 0 ? expected : (int) Math.min(Integer.MAX_VALUE - 8, Math.max(64L, in.length * 4L))];
            int done = 0;
            try {
                while (!inflater.finished()) {
                    if (done == out.length) {
                        if (expected >= 0) {
                            throw new Corrupt("a zlib stream longer than the chunk's " + expected + " bytes");
                        }
                        if (out.length >= Integer.MAX_VALUE - 8) {
                            throw new Corrupt("a zlib stream decoding to more than 2 GiB");
                        }
                        out = Arrays.copyOf(out, Math.toIntExact(Math.min(Integer.MAX_VALUE - 8, 2L * out.length)));
                    }
                    int n = inflater.inflate(out, done, out.length - done);
                    if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                        throw new Corrupt("a zlib stream that ends after " + done + " decoded bytes");
                    }
                    done += n;
                }
            } catch (DataFormatException e) {
                throw new Corrupt("bytes that are not a zlib stream (" + e.getMessage() + ")", e);
            }
            if (expected >= 0 && done != expected) {
                throw new Corrupt("a zlib stream of " + done + " decoded bytes where the chunk holds " + expected);
            }
            return done == out.length ? out : Arrays.copyOf(out, done);
        }

        @Override
        public long mostDecodedBytes(byte[] in) {
            return in.length * DEFLATE_RATIO;
        }

        @Override
        public String describe() {
            return "zlib";
        }
    }

    /** numcodecs' {@code gzip}: one gzip member (RFC 1952). */
    static final class Gzip implements Codec {
        @Override
        public byte[] decode(byte[] in, int expected) {
            try (GZIPInputStream gzip = new GZIPInputStream(new ByteArrayInputStream(in), 64 * 1024)) {
                if (expected < 0) {
                    return gzip.readAllBytes();
                }
                byte[] out = gzip.readNBytes(expected);
                if (out.length != expected || gzip.read() >= 0) {
                    throw new Corrupt("a gzip stream that does not decode to the chunk's " + expected + " bytes");
                }
                return out;
            } catch (IOException e) {
                throw new Corrupt("bytes that are not a gzip stream (" + e.getMessage() + ")", e);
            }
        }

        @Override
        public long mostDecodedBytes(byte[] in) {
            return in.length * DEFLATE_RATIO;
        }

        @Override
        public String describe() {
            return "gzip";
        }
    }

    /** numcodecs' {@code zstd}: one zstd frame, with its content size. */
    static final class ZstdCodec implements Codec {
        @Override
        public byte[] decode(byte[] in, int expected) {
            long declared = Zstd.getFrameContentSize(in);
            long size = expected >= 0 ? expected : declared;
            if (size < 0 || size > Integer.MAX_VALUE - 8 || size > mostDecodedBytes(in)) {
                throw new Corrupt("a zstd frame without a usable content size (" + size + " bytes from " + in.length + ")");
            }
            if (expected >= 0 && declared >= 0 && declared != expected) {
                throw new Corrupt("a zstd frame of " + declared + " bytes where the chunk holds " + expected);
            }
            byte[] out = new byte[(int) size];
            long n;
            try {
                n = Zstd.decompressByteArray(out, 0, out.length, in, 0, in.length);
            } catch (ZstdException e) {
                throw new Corrupt("bytes that are not a zstd frame (" + e.getMessage() + ")", e);
            }
            if (Zstd.isError(n) || n != size) {
                throw new Corrupt("a zstd frame that does not decode to " + size + " bytes ("
                        + (Zstd.isError(n) ? Zstd.getErrorName(n) : n + " bytes") + ")");
            }
            return out;
        }

        @Override
        public long mostDecodedBytes(byte[] in) {
            return in.length * ZSTD_RATIO;
        }

        @Override
        public String describe() {
            return "zstd";
        }
    }

    /** numcodecs' {@code lz4}: the decoded size in 4 little-endian bytes, then one LZ4 block. */
    static final class Lz4 implements Codec {
        @Override
        public byte[] decode(byte[] in, int expected) {
            if (in.length < 4) {
                throw new Corrupt("an lz4 chunk of " + in.length + " bytes, shorter than its size header");
            }
            int size = Blosc.le32(in, 0);
            if (size < 0 || (expected >= 0 && size != expected) || size > mostDecodedBytes(in)) {
                throw new Corrupt("an lz4 chunk claiming " + size + " decoded bytes" + (expected >= 0 ? " where the chunk holds "
                        + expected : ""));
            }
            byte[] out = new byte[size];
            try {
                int n = LZ4Factory.fastestInstance().safeDecompressor().decompress(in, 4, in.length - 4, out, 0, size);
                if (n != size) {
                    throw new Corrupt("an lz4 block decoding to " + n + " bytes where " + size + " were claimed");
                }
            } catch (LZ4Exception e) {
                throw new Corrupt("bytes that are not an lz4 block (" + e.getMessage() + ")", e);
            }
            return out;
        }

        @Override
        public long mostDecodedBytes(byte[] in) {
            return Math.max(0, in.length - 4) * LZ_RATIO;
        }

        @Override
        public String describe() {
            return "lz4";
        }
    }

    /**
     * Decodes numcodecs' {@code vlen-utf8}: the item count in 4 little-endian bytes, then each item as a 4-byte
     * little-endian length and its UTF-8 bytes.
     *
     * @param in the bytes the compressor gave back
     * @param wanted the items the chunk must hold at least
     * @return the strings, in the chunk's memory order
     * @throws Codec.Corrupt when the bytes do not hold that many items
     */
    static String[] vlenUtf8(byte[] in, int wanted) {
        if (in.length < 4) {
            throw new Codec.Corrupt("a vlen-utf8 chunk of " + in.length + " bytes, shorter than its item count");
        }
        int count = Blosc.le32(in, 0);
        if (count < wanted || count < 0) {
            throw new Codec.Corrupt("a vlen-utf8 chunk of " + count + " items where the chunk holds " + wanted);
        }
        if (wanted > (in.length - 4) / 4) {
            // each item takes at least its 4-byte length: checked before an array is sized by the claimed count
            throw new Codec.Corrupt("a vlen-utf8 chunk of " + in.length + " bytes, too short for " + wanted + " items");
        }
        String[] out = new String[wanted];
        int at = 4;
        for (int i = 0; i < wanted; i++) {
            if (at + 4 > in.length) {
                throw new Codec.Corrupt("a vlen-utf8 chunk that ends before item " + i);
            }
            int length = Blosc.le32(in, at);
            at += 4;
            if (length < 0 || length > in.length - at) {
                throw new Codec.Corrupt("a vlen-utf8 item " + i + " of " + length + " bytes at byte " + at + " of "
                        + in.length);
            }
            out[i] = new String(in, at, length, StandardCharsets.UTF_8);
            at += length;
        }
        return out;
    }
}
