package dev.memfit.io.zarr;

/**
 * One step of a zarr array's chunk pipeline read backwards: the compressor, or a filter. Implementations are
 * stateless and thread-safe.
 */
interface Codec {

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
        System.arraycopy(decode(in, expected), 0, out, 0, expected);
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
