package dev.memfit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * What every fuzz test ({@code *FuzzTest}, run by Jazzer) asserts about a reader given arbitrary bytes: it succeeds or
 * throws a {@link MemfitException} (the one documented way to refuse input), never another throwable, and it never
 * allocates by what a header claims rather than by what the file holds.
 *
 * <p>The allocation check: the heap bytes the calling thread allocates during the call (HotSpot's per-thread
 * counter, {@code com.sun.management.ThreadMXBean}) must stay below {@link #heapBudget(long)} of the bytes the call
 * may read. That is a bound on the total, so it also bounds every single allocation; a header that makes a reader
 * size a buffer by its claim (2^30 x 2^30 pixels, a 2^40-element shape) overshoots it by orders of magnitude. The
 * fuzz JVM also runs with a small heap (see lib/memfit/pom.xml), so such a claim fails fast with an
 * {@link OutOfMemoryError}, which is a finding too. Native memory is checked by the targets themselves, through
 * {@link NativeMemory}'s counters and the sizes a successfully read header promises.
 */
public final class Fuzzing {

    /** Fixed slack for message building, class metadata and the readers' small fixed buffers (64 KiB probes). */
    private static final long SLACK_BYTES = 2L << 20;
    /** Heap bytes allowed per byte read: parsers copy, decode and box a few times over, never by a claimed size. */
    private static final long BYTES_PER_INPUT_BYTE = 64;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    /** Names that could reach outside the fixture folder: devices, FIFOs or /proc files would block or mislead. */
    private static final Pattern OUTSIDE = Pattern.compile("\\.\\.|(^|[^\\w.\\-])/");

    private Fuzzing() {
    }

    /** A call under test. */
    @FunctionalInterface
    public interface Call {
        /**
         * Runs the code under test.
         *
         * @throws Exception anything; only a {@link MemfitException} counts as a clean refusal
         */
        void run() throws Exception;
    }

    /**
     * The heap a call may allocate when it may read {@code inputBytes} bytes.
     *
     * @param inputBytes the size of the fuzzed file plus the fixtures it may name
     * @return the budget in bytes
     */
    public static long heapBudget(long inputBytes) {
        return SLACK_BYTES + BYTES_PER_INPUT_BYTE * inputBytes;
    }

    /**
     * Runs a call that must succeed or throw a {@link MemfitException}; any other throwable propagates unchanged
     * (so that Jazzer reports it with its own stack), and the heap it allocated is checked against the budget.
     *
     * @param inputBytes what the call may read: the fuzzed file and any fixture files it names
     * @param call the code under test
     * @return true when the call succeeded, false when it refused the input with a MemfitException
     * @throws Exception whatever the call threw other than a MemfitException
     */
    public static boolean succeedsOrRefuses(long inputBytes, Call call) throws Exception {
        long before = THREADS.getCurrentThreadAllocatedBytes();
        boolean succeeded = runOnce(call);
        long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
        if (allocated > heapBudget(inputBytes)) {
            // The first call of a code path also pays for class initialisation, lambda linkage and Jazzer's
            // instrumentation: measure again, warm. A buffer sized by a header's claim is allocated every time.
            before = THREADS.getCurrentThreadAllocatedBytes();
            runOnce(call);
            allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
        }
        if (Boolean.getBoolean("memfit.fuzz.verbose")) {
            System.err.println("fuzz: " + inputBytes + " input bytes, " + allocated + " heap bytes");
        }
        if (allocated > heapBudget(inputBytes)) {
            throw new AssertionError("allocated " + allocated + " heap bytes reading " + inputBytes
                    + " input bytes (budget " + heapBudget(inputBytes) + "): something is sized by a header's claim");
        }
        return succeeded;
    }

    private static boolean runOnce(Call call) throws Exception {
        try {
            call.run();
            return true;
        } catch (MemfitException refused) {
            if (refused.getMessage() == null || refused.getMessage().isBlank()) {
                throw new AssertionError("a MemfitException without a message", refused);
            }
            return false;
        }
    }

    /**
     * Whether a listing's text names only files inside the fixture folder (no absolute paths, no {@code ..}): other
     * names are skipped, not fuzzed, because they could name a FIFO or a device and block the fuzzer.
     *
     * @param text the listing
     * @return true when it is safe to open
     */
    public static boolean staysInside(String text) {
        return !OUTSIDE.matcher(text).find();
    }

    /**
     * Writes bytes to a file, replacing it.
     *
     * @param file the file
     * @param bytes the content
     * @return the file
     */
    public static Path write(Path file, byte[] bytes) {
        try {
            return Files.write(file, bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Creates a temporary folder for a test class's fixtures, deleted when the JVM exits.
     *
     * @param prefix the folder's name prefix
     * @return the folder
     */
    public static Path tempFolder(String prefix) {
        try {
            Path folder = Files.createTempDirectory(prefix);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(folder)));
            return folder;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void deleteTree(Path folder) {
        try (var paths = Files.walk(folder)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException ignored) {
            // best effort at exit
        }
    }
}
