package dev.memfit.io.codec;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * Decodes zlib streams (RFC 1950: HDF5's gzip filter, numcodecs' zlib) of a known decoded size, with libdeflate where
 * the system has it (Debian's {@code libdeflate0}, reached through the FFM API) and the JDK's {@link Inflater}
 * otherwise. libdeflate decodes a whole buffer at once, about twice as fast as zlib; both give the same bytes and both
 * refuse a damaged stream ({@code ZlibTest} runs every case through both).
 *
 * <p>{@code -Dmemfit.zlib=jdk} keeps to the JDK's inflater.
 *
 * <p>Written here rather than taken from a library: the Java bindings of libdeflate on Maven Central
 * (libdeflate-java) ship their own native builds, where this binds the system's package in a few lines of FFM.
 */
public final class Zlib {

    /**
     * The most a deflate stream can expand: 258 bytes from a 2-bit code (RFC 1951), about 1032:1, plus headers. A
     * stream claiming more than this many bytes per stored byte is damaged, and is refused before anything that large
     * is allocated for it.
     */
    public static final long MOST_EXPANSION = 1033;

    private static final ThreadLocal<Inflater> INFLATER = ThreadLocal.withInitial(Inflater::new);

    private Zlib() {
    }

    /**
     * Decodes one zlib stream that must decode to exactly {@code size} bytes.
     *
     * @param input the stream (mapped file bytes or a heap array)
     * @param size the decoded size the container says the stream holds
     * @return the decoded bytes
     * @throws DataFormatException when the stream is damaged, ends early, or decodes to another size
     */
    public static byte[] inflate(MemorySegment input, int size) throws DataFormatException {
        if (size < 0 || size > MOST_EXPANSION * input.byteSize() + 64) {
            throw new DataFormatException("a deflate stream of " + input.byteSize() + " bytes cannot decode to " + size
                    + " bytes");
        }
        return useLibDeflate() ? libdeflate(input, size) : jdk(input, size);
    }

    /**
     * Which decoder {@link #inflate} uses in this process.
     *
     * @return {@code "libdeflate"} or {@code "java.util.zip"}
     */
    public static String implementation() {
        return useLibDeflate() ? "libdeflate" : "java.util.zip";
    }

    /** libdeflate when it is installed and {@code memfit.zlib} does not say {@code jdk} (read at each call). */
    private static boolean useLibDeflate() {
        return LibDeflate.ZLIB != null && !"jdk".equals(System.getProperty("memfit.zlib"));
    }

    /** Decodes with libdeflate: a decompressor from the pool (each holds state for one stream at a time). */
    private static byte[] libdeflate(MemorySegment input, int size) throws DataFormatException {
        MemorySegment decompressor = LibDeflate.POOL.poll();
        if (decompressor == null) {
            try {
                decompressor = (MemorySegment) LibDeflate.ALLOC.invokeExact();
            } catch (Throwable e) {
                throw new IllegalStateException("libdeflate_alloc_decompressor failed", e);
            }
            if (decompressor.equals(MemorySegment.NULL)) {
                throw new OutOfMemoryError("libdeflate could not allocate a decompressor");
            }
        }
        byte[] out = new byte[size];
        int result;
        try {
            // a critical call: the heap array is passed as it lies, no copy; libdeflate never writes past size
            result = (int) LibDeflate.ZLIB.invokeExact(decompressor, input, input.byteSize(), MemorySegment.ofArray(out),
                    (long) size, MemorySegment.NULL);
        } catch (Throwable e) {
            throw new IllegalStateException("libdeflate_zlib_decompress failed", e);
        } finally {
            LibDeflate.POOL.add(decompressor);
        }
        return switch (result) {
            case 0 -> out;
            case 1 -> throw new DataFormatException("the deflate stream of " + input.byteSize() + " bytes is damaged");
            case 2 -> throw new DataFormatException("the deflate stream of " + input.byteSize() + " bytes decodes to fewer "
                    + "than the expected " + size + " bytes");
            case 3 -> throw new DataFormatException("the deflate stream of " + input.byteSize() + " bytes decodes to more "
                    + "than the expected " + size + " bytes");
            default -> throw new DataFormatException("libdeflate result " + result);
        };
    }

    /** Decodes with the JDK's inflater, the output growing with what the stream gives (a damaged one fails early). */
    private static byte[] jdk(MemorySegment input, int size) throws DataFormatException {
        Inflater inflater = INFLATER.get();
        inflater.reset();
        inflater.setInput(input.isNative() ? input.asByteBuffer() : ByteBuffer.wrap(input.toArray(ValueLayout.JAVA_BYTE)));
        byte[] out = new byte[(int) Math.min(size, input.byteSize() * 64 + 4096)];
        ByteBuffer target = ByteBuffer.wrap(out);
        while (!inflater.finished()) {
            if (!target.hasRemaining()) {
                if (out.length == size) {
                    break;
                }
                out = Arrays.copyOf(out, (int) Math.min(size, 2L * out.length));
                target = ByteBuffer.wrap(out).position(target.position());
            }
            if (inflater.inflate(target) == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                break;
            }
        }
        if (!inflater.finished() || target.position() != size) {
            throw new DataFormatException("deflate stream of " + input.byteSize() + " bytes gave " + target.position()
                    + " bytes" + (inflater.finished() ? "" : " and did not end") + ", expected " + size);
        }
        return out;
    }

    /** libdeflate's entry points, looked up once; null where the library is not installed. */
    private static final class LibDeflate {
        static final MethodHandle ALLOC;
        static final MethodHandle ZLIB;
        /** Decompressors not in use; as many are made as threads decode at once, and kept for the process. */
        static final ConcurrentLinkedQueue<MemorySegment> POOL = new ConcurrentLinkedQueue<>();

        static {
            MethodHandle alloc = null;
            MethodHandle zlib = null;
            try {
                SymbolLookup library = SymbolLookup.libraryLookup("libdeflate.so.0", Arena.global());
                Linker linker = Linker.nativeLinker();
                alloc = linker.downcallHandle(library.find("libdeflate_alloc_decompressor").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.ADDRESS));
                // enum libdeflate_result libdeflate_zlib_decompress(struct libdeflate_decompressor *, const void *in,
                //     size_t in_nbytes, void *out, size_t out_nbytes_avail, size_t *actual_out_nbytes_ret)
                zlib = linker.downcallHandle(library.find("libdeflate_zlib_decompress").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                                ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS),
                        Linker.Option.critical(true));
            } catch (IllegalArgumentException | java.util.NoSuchElementException | UnsatisfiedLinkError e) {
                alloc = null;
                zlib = null;
            }
            ALLOC = alloc;
            ZLIB = zlib;
        }
    }
}
