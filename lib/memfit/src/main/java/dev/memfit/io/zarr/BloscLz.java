package dev.memfit.io.zarr;

/**
 * The decoder of BloscLZ, Blosc's own LZ77 variant (a descendant of FastLZ level 2), written from the format as
 * c-blosc's {@code blosc/blosclz.c} decodes it.
 *
 * <p>The stream is a sequence of instructions. The first byte's low five bits are the first control byte (its top
 * three bits are a format marker). A control byte below 32 starts a literal run of {@code ctrl + 1} bytes copied from
 * the input. A control byte of 32 or more is a match: its top three bits minus one are the length (7 means the length
 * continues in the following bytes, each added, until one is not 255), its low five bits are the high byte of the
 * distance and the next byte its low byte; the copy is {@code length + 3} bytes from {@code distance + 1} bytes back.
 * A distance of {@code 31 << 8 | 255} says that the real distance follows in two big-endian bytes, plus 8191. The
 * next control byte follows each instruction; the stream ends with the input.
 */
final class BloscLz {

    private static final int MAX_DISTANCE = 8191;

    private BloscLz() {
    }

    /**
     * Decodes a BloscLZ stream.
     *
     * @param in the input
     * @param inOffset the first byte of the stream
     * @param inLength its length
     * @param out where the bytes go
     * @param outOffset the first byte to write
     * @param outLength the room, which the decoded bytes must fill exactly
     * @return the bytes written, or -1 when the stream is corrupt (reads outside the input or the output)
     */
    static int decode(byte[] in, int inOffset, int inLength, byte[] out, int outOffset, int outLength) {
        if (inLength == 0) {
            return 0;
        }
        int ip = inOffset;
        int ipLimit = inOffset + inLength;
        int op = outOffset;
        int opLimit = outOffset + outLength;
        int ctrl = in[ip++] & 31;
        while (true) {
            if (ctrl >= 32) {
                int length = (ctrl >>> 5) - 1;
                int distance = (ctrl & 31) << 8;
                if (length == 6) {
                    int code;
                    do {
                        if (ip + 1 >= ipLimit) {
                            return -1;
                        }
                        code = in[ip++] & 0xff;
                        length += code;
                        if (length > outLength) {
                            return -1;
                        }
                    } while (code == 255);
                } else if (ip + 1 >= ipLimit) {
                    return -1;
                }
                int code = in[ip++] & 0xff;
                length += 3;
                int back = distance + code;
                if (code == 255 && distance == (31 << 8)) {
                    if (ip + 1 >= ipLimit) {
                        return -1;
                    }
                    int far = ((in[ip] & 0xff) << 8) | (in[ip + 1] & 0xff);
                    ip += 2;
                    back = far + MAX_DISTANCE;
                }
                int ref = op - back - 1;
                // compared as differences (no sum to overflow)
                if (length > opLimit - op || ref < outOffset) {
                    return -1;
                }
                if (back == 0) {
                    java.util.Arrays.fill(out, op, op + length, out[ref]);
                } else if (op - ref >= length) {
                    System.arraycopy(out, ref, out, op, length);
                } else {
                    for (int i = 0; i < length; i++) {
                        out[op + i] = out[ref + i];
                    }
                }
                op += length;
                if (ip >= ipLimit) {
                    break;
                }
                ctrl = in[ip++] & 0xff;
            } else {
                int length = ctrl + 1;
                if (length > opLimit - op || length > ipLimit - ip) {
                    return -1;
                }
                System.arraycopy(in, ip, out, op, length);
                op += length;
                ip += length;
                if (ip >= ipLimit) {
                    break;
                }
                ctrl = in[ip++] & 0xff;
            }
        }
        return op - outOffset;
    }
}
