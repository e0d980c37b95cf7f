package dev.memfit;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Copies between native segments with the C library's {@code memcpy}, through a critical FFM call (no thread-state
 * change), and with {@link MemorySegment#copy} when either side is on the heap or the C library has none.
 *
 * <p>Why: a loader's rows go from a mapped file to a batch buffer one row at a time, and the JDK's copy of native
 * memory ({@code Unsafe.copyMemory}) moved 13.3-13.5 GB/s of random 20 KB rows from a page-cached {@code .npy} where
 * glibc's {@code memcpy} moved 15.0 (one thread, {@code ./memfit bench loader --threads 1}, alternated runs): the gap
 * to a C gather was this. The segments are bounds-checked by slicing, and a segment's arena stays open for the call
 * (the linker holds it), as {@link MemorySegment#copy} guarantees. {@code -Dmemfit.copy=jdk} keeps to the JDK's copy.
 *
 * <p>One difference remains: a mapped file cut short by another program while it is read makes the JDK's copy throw
 * an {@code InternalError}, and {@code memcpy} end the JVM (SIGBUS). memfit replaces files by renaming, never in place,
 * so its own files cannot be cut under a mapping.
 */
public final class NativeCopy {

    private static final MethodHandle MEMCPY = Linker.nativeLinker().defaultLookup().find("memcpy")
            .map(address -> Linker.nativeLinker().downcallHandle(address, FunctionDescriptor.of(ValueLayout.ADDRESS,
                    ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG), Linker.Option.critical(false)))
            .orElse(null);
    private static final MethodHandle MEMSET = Linker.nativeLinker().defaultLookup().find("memset")
            .map(address -> Linker.nativeLinker().downcallHandle(address, FunctionDescriptor.of(ValueLayout.ADDRESS,
                    ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG), Linker.Option.critical(false)))
            .orElse(null);
    /** Read once, not at every row. */
    private static final boolean JDK_ONLY = "jdk".equals(System.getProperty("memfit.copy"));

    private NativeCopy() {
    }

    /**
     * Copies {@code bytes} bytes; the ranges must not overlap.
     *
     * @param from the source
     * @param fromOffset the first byte in the source
     * @param to the destination
     * @param toOffset the first byte in the destination
     * @param bytes how many
     * @throws IndexOutOfBoundsException when a range is outside its segment
     */
    public static void copy(MemorySegment from, long fromOffset, MemorySegment to, long toOffset, long bytes) {
        if (MEMCPY == null || JDK_ONLY || !from.isNative() || !to.isNative() || to.isReadOnly()) {
            MemorySegment.copy(from, fromOffset, to, toOffset, bytes);
            return;
        }
        MemorySegment source = from.asSlice(fromOffset, bytes);
        MemorySegment target = to.asSlice(toOffset, bytes);
        try {
            MemorySegment ignored = (MemorySegment) MEMCPY.invokeExact(target, source, bytes);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("memcpy failed", e);
        }
    }

    /**
     * Sets {@code bytes} bytes to zero.
     *
     * @param segment where
     * @param offset the first byte
     * @param bytes how many
     * @throws IndexOutOfBoundsException when the range is outside the segment
     */
    public static void zero(MemorySegment segment, long offset, long bytes) {
        MemorySegment target = segment.asSlice(offset, bytes);
        if (MEMSET == null || JDK_ONLY || !segment.isNative() || segment.isReadOnly()) {
            target.fill((byte) 0);
            return;
        }
        try {
            MemorySegment ignored = (MemorySegment) MEMSET.invokeExact(target, 0, bytes);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("memset failed", e);
        }
    }
}
