package dev.memfit;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Optional;

/**
 * Page-locks ("pins") host memory that batches are copied from, as PyTorch's {@code pin_memory} does: the GPU then
 * copies it by DMA at the link's speed, where pageable memory goes through a staging copy in the driver at a fraction
 * of it. memfit pins its loaders' own off-heap batch buffers in place ({@code cudaHostRegister}), once per loader, so
 * nothing is copied twice; DJL has no pinned allocator of its own.
 *
 * <p>Works only through a CUDA runtime ({@code libcudart}) that PyTorch has already loaded (found with
 * {@code dlopen(RTLD_NOLOAD)}, never loaded here), so pinning is registered with the runtime and driver that train;
 * where there is none (DJL's CPU engine, a machine without a GPU) {@link #pin} returns nothing and callers go on with
 * pageable memory. A refused registration leaves no error behind for PyTorch's next kernel (the runtime's last error
 * is cleared). Pinned memory cannot be swapped out: pin buffers, never whole data sets.
 */
public final class PinnedMemory {

    /** cudaHostRegisterPortable: pinned for every CUDA context of the process, not only the current one. */
    private static final int PORTABLE = 1;
    /** Sonames of the CUDA runtime, newest first; the one PyTorch loaded is found by its soname. */
    private static final List<String> RUNTIMES = List.of("libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
            "libcudart.so");

    /** The runtime once found; null until PyTorch has loaded one (a failed search is not kept). */
    private static volatile Runtime runtime;

    private PinnedMemory() {
    }

    /** One pinned range; closing it unpins the memory, which must happen before the memory is freed. */
    public interface Pin extends AutoCloseable {
        /**
         * The bytes pinned.
         *
         * @return bytes
         */
        long bytes();

        /** Unpins the range (once; later calls do nothing). */
        @Override
        void close();
    }

    /**
     * Whether host memory can be pinned here: a CUDA runtime is loaded and answers.
     *
     * @return true when {@link #pin} pins
     */
    public static boolean available() {
        return runtime().error == null;
    }

    /**
     * Why memory cannot be pinned here, in words, when {@link #available()} is false.
     *
     * @return the reason, or empty when pinning is available
     */
    public static Optional<String> unavailableReason() {
        return Optional.ofNullable(runtime().error);
    }

    /**
     * Pins a native segment in place.
     *
     * @param segment off-heap memory that stays allocated until the returned pin is closed
     * @return the pin, or empty when pinning is not available or the runtime refused (out of lockable memory, say)
     */
    public static Optional<Pin> pin(MemorySegment segment) {
        if (!segment.isNative() || segment.byteSize() == 0) {
            return Optional.empty();
        }
        Runtime cuda = runtime();
        if (cuda.error != null) {
            return Optional.empty();
        }
        int status;
        try {
            status = (int) cuda.register.invokeExact(segment, segment.byteSize(), PORTABLE);
        } catch (Throwable e) {
            return Optional.empty();
        }
        if (status != 0) {
            cuda.clearError();
            return Optional.empty();
        }
        return Optional.of(new Pin() {
            private boolean closed;

            @Override
            public long bytes() {
                return segment.byteSize();
            }

            @Override
            public synchronized void close() {
                if (closed) {
                    return;
                }
                closed = true;
                try {
                    if ((int) cuda.unregister.invokeExact(segment) != 0) {
                        cuda.clearError();   // unpinning only fails for memory that was never pinned: nothing to undo
                    }
                } catch (Throwable e) {
                    // the runtime is gone (process exit): nothing left to undo
                }
            }
        });
    }

    private static Runtime runtime() {
        Runtime found = runtime;
        if (found == null) {
            synchronized (PinnedMemory.class) {
                found = runtime;
                if (found == null) {
                    found = Runtime.load();
                    if (found.error == null) {
                        runtime = found;   // only success is kept: a runtime PyTorch loads later is found then
                    }
                }
            }
        }
        return found;
    }

    /** The entry points of the CUDA runtime, or why there are none. */
    private record Runtime(MethodHandle register, MethodHandle unregister, MethodHandle lastError, String error) {

        private static final int RTLD_LAZY = 1;
        private static final int RTLD_NOLOAD = 4;

        static Runtime load() {
            Linker linker = Linker.nativeLinker();
            Optional<MemorySegment> dlopen = linker.defaultLookup().find("dlopen");
            Optional<MemorySegment> dlsym = linker.defaultLookup().find("dlsym");
            if (dlopen.isEmpty() || dlsym.isEmpty()) {
                return failed("no dlopen here");
            }
            MethodHandle open = linker.downcallHandle(dlopen.get(),
                    FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            MethodHandle symbol = linker.downcallHandle(dlsym.get(),
                    FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
            try (Arena names = Arena.ofConfined()) {
                for (String name : RUNTIMES) {
                    MemorySegment handle = (MemorySegment) open.invokeExact(names.allocateFrom(name), RTLD_LAZY | RTLD_NOLOAD);
                    if (handle.equals(MemorySegment.NULL)) {
                        continue;   // not loaded by PyTorch: never loaded here
                    }
                    MemorySegment register = (MemorySegment) symbol.invokeExact(handle, names.allocateFrom("cudaHostRegister"));
                    MemorySegment unregister = (MemorySegment) symbol.invokeExact(handle, names.allocateFrom("cudaHostUnregister"));
                    MemorySegment lastError = (MemorySegment) symbol.invokeExact(handle, names.allocateFrom("cudaGetLastError"));
                    if (register.equals(MemorySegment.NULL) || unregister.equals(MemorySegment.NULL)
                            || lastError.equals(MemorySegment.NULL)) {
                        return failed(name + " has no cudaHostRegister");
                    }
                    return new Runtime(
                            linker.downcallHandle(register, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT)),
                            linker.downcallHandle(unregister, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS)),
                            linker.downcallHandle(lastError, FunctionDescriptor.of(ValueLayout.JAVA_INT)), null);
                }
            } catch (Throwable e) {
                return failed("looking for the CUDA runtime failed: " + e);
            }
            return failed("no CUDA runtime loaded by PyTorch (looked for " + String.join(", ", RUNTIMES) + ")");
        }

        static Runtime failed(String why) {
            return new Runtime(null, null, null, why);
        }

        /** Clears the runtime's last error, so that a refused call is not reported by PyTorch's next kernel. */
        void clearError() {
            try {
                int ignored = (int) lastError.invokeExact();
            } catch (Throwable e) {
                // nothing to clear
            }
        }
    }
}
