package dev.memfit.io.hdf5;

import dev.memfit.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Widening and narrowing between float32 and float64 in blocks: every element, across block ends, both byte orders. */
class ConvertTest {

    @Test
    void widensAndNarrowsEveryElementAsACastWould() {
        Random random = new Random(8);
        int n = 10_001;   // more than two blocks, not a multiple of one
        for (ByteOrder order : new ByteOrder[]{ByteOrder.LITTLE_ENDIAN, ByteOrder.BIG_ENDIAN}) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment floats = arena.allocate(3 + 4L * n);     // an odd offset: unaligned reads
                MemorySegment doubles = arena.allocate(5 + 8L * n);
                float[] f = new float[n];
                double[] d = new double[n];
                for (int i = 0; i < n; i++) {
                    f[i] = (float) (random.nextGaussian() * 1e3);
                    d[i] = random.nextGaussian() * 1e30;
                    floats.set(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(order), 3 + 4L * i, f[i]);
                    doubles.set(ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(order), 5 + 8L * i, d[i]);
                }
                MemorySegment wide = arena.allocate(8L * n + 16);
                MemorySegment narrow = arena.allocate(4L * n + 16);
                ChunkedVector.convert(floats, 3, DType.FLOAT32, order, wide, 16, n, true);
                ChunkedVector.convert(doubles, 5, DType.FLOAT64, order, narrow, 16, n, false);
                for (int i = 0; i < n; i++) {
                    assertEquals((double) f[i], wide.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 16 + 8L * i), order + " widened " + i);
                    assertEquals((float) d[i], narrow.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 16 + 4L * i), order + " narrowed " + i);
                }
            }
        }
    }
}
