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
 * <p>Works through the CUDA runtime that PyTorch has loaded ({@code libcudart}); where there is none (a CPU-only
 * engine, a machine without a GPU) {@link #available()} is false and {@link #pin} returns nothing, so callers go on
 * with pageable memory. Pinned memory cannot be swapped out: pin buffers, never whole data sets.
 */
public final class PinnedMemory {

    /** cudaHostRegisterPortable: pinned for every CUDA context of the process, not only the current one. */
    private static final int PORTABLE = 1;
    /** Sonames of the CUDA runtime, newest first; the one PyTorch loaded is found by its soname. */
    private static final List<String> RUNTIMES = List.of("libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
            "libcudart.so");

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
                    int ignored = (int) cuda.unregister.invokeExact(segment);
                } catch (Throwable e) {
                    // unpinning only fails for memory that was never pinned: nothing left to undo
                }
            }
        });
    }

    private static Runtime runtime() {
        Runtime found = runtime;
        if (found == null) {
            synchronized (PinnedMemory.class) {
                if (runtime == null) {
                    runtime = Runtime.load();
                }
                found = runtime;
            }
        }
        return found;
    }

    /** The two entry points of the CUDA runtime, or why there are none. */
    private record Runtime(MethodHandle register, MethodHandle unregister, String error) {

        static Runtime load() {
            Linker linker = Linker.nativeLinker();
            StringBuilder tried = new StringBuilder();
            for (String name : RUNTIMES) {
                SymbolLookup library;
                try {
                    // the global arena: the runtime stays loaded for the life of the process, as PyTorch keeps it
                    library = SymbolLookup.libraryLookup(name, Arena.global());
                } catch (IllegalArgumentException | IllegalCallerException e) {
                    tried.append(tried.isEmpty() ? "" : ", ").append(name);
                    continue;
                }
                Optional<MemorySegment> register = library.find("cudaHostRegister");
                Optional<MemorySegment> unregister = library.find("cudaHostUnregister");
                if (register.isEmpty() || unregister.isEmpty()) {
                    tried.append(tried.isEmpty() ? "" : ", ").append(name).append(" (no cudaHostRegister)");
                    continue;
                }
                MethodHandle registerHandle = linker.downcallHandle(register.get(), FunctionDescriptor.of(
                        ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
                MethodHandle unregisterHandle = linker.downcallHandle(unregister.get(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
                return new Runtime(registerHandle, unregisterHandle, null);
            }
            return new Runtime(null, null, "no CUDA runtime to pin memory with (tried " + tried + ")");
        }
    }
}
