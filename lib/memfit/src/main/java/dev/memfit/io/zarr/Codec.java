package dev.memfit.io.zarr;

/**
 * One step of a zarr array's chunk pipeline read backwards: the compressor, or a filter. Implementations are
 * stateless and thread-safe.
 */
interface Codec {

    /** Deflate's largest ratio (zlib, gzip, Blosc's zlib): a 258-byte match coded in 2 bits. */
    long DEFLATE_RATIO = 1032;
    /** LZ4's and BloscLZ's: each further byte of a match length adds 255 bytes. */
    long LZ_RATIO = 256;
    /** Snappy's: a copy of 64 bytes coded in 3 bytes. */
    long SNAPPY_RATIO = 32;
    /** Zstandard's: an RLE block, 4 bytes for up to 128 KiB. */
    long ZSTD_RATIO = 32768;

    /**
     * The most bytes these encoded bytes can decode to: their length times the codec's largest ratio (the constants
     * above, from each format's densest encoding), or exactly what a header says where the format stores the data
     * as is. A chunk claiming more (from {@code .zarray}) is damaged, whatever its bytes hold, and is refused before
     * anything is allocated for it.
     *
     * @param in the encoded bytes
     * @return bytes
     */
    long mostDecodedBytes(byte[] in);

    /**
     * Decodes one chunk's bytes.
     *
     * @param in the encoded bytes
     * @param expected the decoded size when known (a numeric chunk), else -1
     * @return the decoded bytes
     * @throws Corrupt when the bytes are not what the codec writes
     */
    byte[] decode(byte[] in, int expected);

    /**
     * Decodes a chunk of known size into a buffer the caller reuses between chunks (no allocation where the codec
     * allows it: Blosc).
     *
     * @param in the encoded bytes
     * @param expected the decoded size
     * @param out at least {@code expected} bytes; the first {@code expected} are written
     * @throws Corrupt when the bytes are not what the codec writes
     */
    default void decodeInto(byte[] in, int expected, byte[] out) {
        byte[] decoded = decode(in, expected);
        if (decoded.length != expected) {
            throw new Corrupt(decoded.length + " decoded bytes where the chunk holds " + expected);
        }
        System.arraycopy(decoded, 0, out, 0, expected);
    }

    /**
     * What the codec is, for messages and {@code inspect}, such as "blosc(lz4, shuffle)".
     *
     * @return the description
     */
    String describe();

    /** Encoded bytes that do not decode: the message says what was found; the reader adds the store and the key. */
    final class Corrupt extends RuntimeException {

        /**
         * Creates the exception.
         *
         * @param found what the bytes hold
         */
        Corrupt(String found) {
            super(found, null, false, false);
        }

        /**
         * Creates the exception with a cause.
         *
         * @param found what the bytes hold
         * @param cause the decoder's failure
         */
        Corrupt(String found, Throwable cause) {
            super(found, cause, false, false);
        }
    }
}
