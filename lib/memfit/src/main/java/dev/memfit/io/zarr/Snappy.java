package dev.memfit.io.zarr;

/**
 * The decoder of raw Snappy blocks (no framing), as Blosc stores its {@code snappy} splits: a varint with the decoded
 * length, then elements whose tag byte's low two bits say what follows: 0, a literal (length - 1 in the tag's top six
 * bits, or in the next 1-4 little-endian bytes when those bits are 60-63); 1, a copy of 4-11 bytes with an 11-bit
 * offset; 2 and 3, a copy of 1-64 bytes with a 2- or 4-byte little-endian offset. Copies may overlap their output.
 */
final class Snappy {

    private Snappy() {
    }

    /**
     * Decodes a raw Snappy block.
     *
     * @param in the input
     * @param inOffset the first byte of the block
     * @param inLength its length
     * @param out where the bytes go
     * @param outOffset the first byte to write
     * @param outLength the room
     * @return the bytes written, or -1 when the block is corrupt or larger than the room
     */
    static int decode(byte[] in, int inOffset, int inLength, byte[] out, int outOffset, int outLength) {
        int ip = inOffset;
        int ipLimit = inOffset + inLength;
        long declared = 0;
        for (int shift = 0; ; shift += 7) {
            if (ip >= ipLimit || shift > 28) {
                return -1;
            }
            int b = in[ip++] & 0xff;
            declared |= (long) (b & 0x7f) << shift;
            if (b < 0x80) {
                break;
            }
        }
        if (declared > outLength) {
            return -1;
        }
        int opLimit = outOffset + (int) declared;
        int op = outOffset;
        while (ip < ipLimit) {
            int tag = in[ip++] & 0xff;
            switch (tag & 3) {
                case 0 -> {
                    int length = tag >>> 2;
                    if (length >= 60) {
                        int bytes = length - 59;
                        if (ip + bytes > ipLimit) {
                            return -1;
                        }
                        long value = 0;
                        for (int i = 0; i < bytes; i++) {
                            value |= (long) (in[ip++] & 0xff) << (8 * i);
                        }
                        if (value >= Integer.MAX_VALUE) {
                            return -1;
                        }
                        length = (int) value;
                    }
                    length += 1;
                    // compared as differences: a length near 2^31 would overflow a sum
                    if (length > ipLimit - ip || length > opLimit - op) {
                        return -1;
                    }
                    System.arraycopy(in, ip, out, op, length);
                    ip += length;
                    op += length;
                }
                case 1 -> {
                    if (ip >= ipLimit) {
                        return -1;
                    }
                    int length = 4 + ((tag >>> 2) & 7);
                    int offset = ((tag >>> 5) << 8) | (in[ip++] & 0xff);
                    op = copy(out, outOffset, op, opLimit, offset, length);
                }
                case 2 -> {
                    if (ip + 2 > ipLimit) {
                        return -1;
                    }
                    int offset = (in[ip] & 0xff) | (in[ip + 1] & 0xff) << 8;
                    ip += 2;
                    op = copy(out, outOffset, op, opLimit, offset, (tag >>> 2) + 1);
                }
                default -> {
                    if (ip + 4 > ipLimit) {
                        return -1;
                    }
                    long offset = (in[ip] & 0xffL) | (in[ip + 1] & 0xffL) << 8 | (in[ip + 2] & 0xffL) << 16
                            | (in[ip + 3] & 0xffL) << 24;
                    ip += 4;
                    op = offset > Integer.MAX_VALUE ? -1 : copy(out, outOffset, op, opLimit, (int) offset, (tag >>> 2) + 1);
                }
            }
            if (op < 0) {
                return -1;
            }
        }
        return op == opLimit ? op - outOffset : -1;
    }

    /** Copies a match; returns the new output position, or -1 when it reaches outside the output. */
    private static int copy(byte[] out, int outOffset, int op, int opLimit, int offset, int length) {
        if (offset <= 0 || offset > op - outOffset || length > opLimit - op) {
            return -1;
        }
        int ref = op - offset;
        if (offset >= length) {
            System.arraycopy(out, ref, out, op, length);
        } else {
            for (int i = 0; i < length; i++) {
                out[op + i] = out[ref + i];
            }
        }
        return op + length;
    }
}
