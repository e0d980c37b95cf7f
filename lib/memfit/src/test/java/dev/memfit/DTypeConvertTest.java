package dev.memfit;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * In-place conversion between float32 and float64, staged as the loaders stage it: block by block, the result equals
 * a cast of every element, across block ends and in both byte orders of the source.
 */
class DTypeConvertTest {

    @Test
    void convertsInPlaceAsACastWouldEitherWay() {
        Random random = new Random(4);
        int n = 10_003;   // more than two blocks, not a multiple of one
        for (ByteOrder order : new ByteOrder[]{ByteOrder.LITTLE_ENDIAN, ByteOrder.BIG_ENDIAN}) {
            for (DType[] pair : new DType[][]{{DType.FLOAT32, DType.FLOAT64}, {DType.FLOAT64, DType.FLOAT32}}) {
                DType from = pair[0];
                DType to = pair[1];
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment buffer = arena.allocate((long) n * 8);
                    long start = DType.stagingOffset(n, from, to);
                    double[] expected = new double[n];
                    for (int i = 0; i < n; i++) {
                        double value = random.nextGaussian() * 1e6;
                        if (from == DType.FLOAT32) {
                            buffer.set(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(order), start + 4L * i, (float) value);
                            expected[i] = (float) value;
                        } else {
                            buffer.set(ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(order), start + 8L * i, value);
                            expected[i] = (float) value;
                        }
                    }
                    DType.convertInPlace(buffer, n, from, order, to);
                    for (int i = 0; i < n; i++) {
                        double got = to == DType.FLOAT64 ? buffer.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8L * i)
                                : buffer.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 4L * i);
                        assertEquals(expected[i], got, order + " " + from + " to " + to + ", element " + i);
                    }
                }
            }
        }
    }
}
