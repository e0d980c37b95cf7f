package dev.memfit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * The memory this process may use: the machine's RAM, or the memory limit of the container (cgroup) it runs in when
 * that is below the RAM, so that advice inside a 2 GiB Binder container is not based on the host's 256 GiB.
 *
 * <pre>{@code
 * ProcessMemory memory = ProcessMemory.current();
 * System.out.println(memory);   // "1.4 GiB available (container limit 2.0 GiB)"
 * }</pre>
 *
 * <p>Read from Linux's files: {@code /proc/meminfo} ({@code MemTotal}, {@code MemAvailable}) and the memory
 * controller of the process's cgroup named in {@code /proc/self/cgroup}: cgroup v2 ({@code 0::/path} ->
 * {@code /sys/fs/cgroup/path/memory.max} and {@code memory.current}, every ancestor up to the root too, since a
 * parent's limit applies to its children) or v1 (the line naming the {@code memory} controller ->
 * {@code /sys/fs/cgroup/memory/path/memory.limit_in_bytes} and {@code memory.usage_in_bytes}). Hand-written: the
 * JDK's own container support ({@code jdk.internal.platform}) is not exported, and
 * {@code OperatingSystemMXBean.getFreeMemorySize()} reports free memory, which leaves out the reclaimable page cache.
 *
 * @param physicalTotal the machine's RAM (MemTotal), or -1 when unknown
 * @param physicalAvailable RAM the OS can give without swapping (MemAvailable), or -1 when unknown
 * @param limit the container's memory limit when it is below the RAM, or -1 when none applies
 * @param usage the container's memory in use (its page cache included) when a limit applies, else -1
 */
public record ProcessMemory(long physicalTotal, long physicalAvailable, long limit, long usage) {

    /** cgroup v1 writes "no limit" as a huge page-aligned number; anything from 2^62 on counts as unlimited. */
    private static final long V1_UNLIMITED = 1L << 62;

    /**
     * This process's memory, read from the real {@code /proc} and {@code /sys}.
     *
     * @return the memory
     */
    public static ProcessMemory current() {
        return read(Path.of("/"));
    }

    /**
     * Asks the C allocator to give memory it keeps after frees back to the operating system (glibc's
     * {@code malloc_trim(0)}). Freed native memory (an earlier loader's buffers, say) otherwise stays resident and is
     * reused without growing the RSS, so a measurement of what the next step holds would read too little; call this
     * (after {@code System.gc()}) before such a measurement starts.
     *
     * @return true when the allocator was asked; false where it has no such call (musl, macOS)
     */
    public static boolean returnFreedMemory() {
        if (MallocTrim.HANDLE == null) {
            return false;
        }
        try {
            int ignored = (int) MallocTrim.HANDLE.invokeExact(0L);
            return true;
        } catch (Throwable e) {
            return false;
        }
    }

    /**
     * The C allocator this process's native memory comes from: {@code "tcmalloc"}, {@code "jemalloc"} or
     * {@code "mimalloc"} when such a library is loaded (preloaded, as {@code ./memfit train} does), else
     * {@code "glibc"} on Linux, {@code "unknown"} where {@code /proc/self/maps} cannot be read.
     *
     * @return the allocator's name
     */
    public static String allocator() {
        try (java.util.stream.Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            List<String> found = lines.map(line -> line.contains("libtcmalloc") ? "tcmalloc"
                            : line.contains("libjemalloc") ? "jemalloc" : line.contains("libmimalloc") ? "mimalloc" : null)
                    .filter(java.util.Objects::nonNull).limit(1).toList();
            return found.isEmpty() ? "glibc" : found.getFirst();
        } catch (IOException | java.io.UncheckedIOException e) {
            return "unknown";
        }
    }

    /**
     * The bytes this process's C allocator has handed out and not had back: glibc's {@code mallinfo2()}, in-use
     * chunks of every arena plus its mapped chunks. This is where PyTorch's CPU tensors and memfit's native buffers
     * live; unlike the resident set it leaves out what the allocator keeps after frees and the JVM's own heap, so it
     * is what a model's memory estimate can be held to. -1 where it cannot be read: not glibc, or another allocator
     * preloaded (tcmalloc's memory is not glibc's).
     *
     * @return bytes in use, or -1
     */
    public static long mallocInUse() {
        if (MallInfo.HANDLE == null || !MallInfo.GLIBC) {
            return -1;
        }
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment info = (java.lang.foreign.MemorySegment) MallInfo.HANDLE.invokeExact(
                    (java.lang.foreign.SegmentAllocator) arena);
            // struct mallinfo2: arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost
            return info.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 7)
                    + info.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 4);
        } catch (Throwable e) {
            return -1;
        }
    }

    /** glibc's {@code mallinfo2} (glibc 2.33 and later), looked up once; null where the C library has none. */
    private static final class MallInfo {
        /** Whether malloc is glibc's: an allocator is preloaded before the JVM starts, so once is enough. */
        static final boolean GLIBC = "glibc".equals(allocator());
        static final java.lang.invoke.MethodHandle HANDLE = java.lang.foreign.Linker.nativeLinker().defaultLookup()
                .find("mallinfo2")
                .map(address -> java.lang.foreign.Linker.nativeLinker().downcallHandle(address,
                        java.lang.foreign.FunctionDescriptor.of(java.lang.foreign.MemoryLayout.structLayout(
                                java.lang.foreign.MemoryLayout.sequenceLayout(10, java.lang.foreign.ValueLayout.JAVA_LONG)))))
                .orElse(null);
    }

    /** glibc's {@code malloc_trim}, looked up once; null where the C library has none. */
    private static final class MallocTrim {
        static final java.lang.invoke.MethodHandle HANDLE = java.lang.foreign.Linker.nativeLinker().defaultLookup()
                .find("malloc_trim")
                .map(address -> java.lang.foreign.Linker.nativeLinker().downcallHandle(address,
                        java.lang.foreign.FunctionDescriptor.of(java.lang.foreign.ValueLayout.JAVA_INT,
                                java.lang.foreign.ValueLayout.JAVA_LONG)))
                .orElse(null);
    }

    /**
     * The memory as seen under a file-system root that holds {@code proc/meminfo}, {@code proc/self/cgroup} and
     * {@code sys/fs/cgroup}; tests build such a tree in a temporary folder. Missing or unreadable files mean "no
     * limit" (or "unknown" for meminfo), never an exception.
     *
     * @param root the folder standing for {@code /}
     * @return the memory
     */
    public static ProcessMemory read(Path root) {
        long total = -1;
        long available = -1;
        for (String line : lines(root.resolve("proc/meminfo"))) {
            if (line.startsWith("MemTotal:")) {
                total = kibibytes(line);
            } else if (line.startsWith("MemAvailable:")) {
                available = kibibytes(line);
            }
        }
        long limit = Long.MAX_VALUE;
        long usage = -1;
        Path cgroups = root.resolve("sys/fs/cgroup");
        for (String line : lines(root.resolve("proc/self/cgroup"))) {
            // hierarchy-id:controllers:path
            String[] parts = line.split(":", 3);
            if (parts.length < 3) {
                continue;
            }
            boolean v2 = parts[0].equals("0") && parts[1].isEmpty();
            boolean v1 = List.of(parts[1].split(",")).contains("memory");
            if (!v2 && !v1) {
                continue;
            }
            Path base = v2 ? cgroups : cgroups.resolve("memory");
            String limitFile = v2 ? "memory.max" : "memory.limit_in_bytes";
            String usageFile = v2 ? "memory.current" : "memory.usage_in_bytes";
            // from the process's own cgroup up to the root: the smallest limit on the way applies
            Path relative = Path.of(parts[2].startsWith("/") ? parts[2].substring(1) : parts[2]);
            for (Path at = relative; ; at = at.getParent()) {
                Path folder = at == null || at.toString().isEmpty() ? base : base.resolve(at.toString());
                long found = number(folder.resolve(limitFile));
                if (found > 0 && found < V1_UNLIMITED && found < limit) {
                    limit = found;
                    // the usage counts page cache; its inactive part is reclaimed before the limit bites (the JDK
                    // and container runtimes subtract it the same way)
                    long used = number(folder.resolve(usageFile));
                    long inactiveFile = statistic(folder.resolve("memory.stat"), v2 ? "inactive_file" : "total_inactive_file");
                    usage = used < 0 ? -1 : Math.max(0, used - Math.max(0, inactiveFile));
                }
                if (at == null || at.toString().isEmpty()) {
                    break;
                }
            }
        }
        if (limit == Long.MAX_VALUE || (total > 0 && limit >= total)) {
            return new ProcessMemory(total, available, -1, -1);
        }
        return new ProcessMemory(total, available, limit, usage);
    }

    /**
     * Whether a container limit below the machine's RAM applies.
     *
     * @return true inside a limited container
     */
    public boolean containerLimited() {
        return limit > 0;
    }

    /**
     * The memory this process can still get: the machine's available RAM, and inside a limited container at most
     * what the limit leaves ({@code limit - usage}); -1 when nothing could be read.
     *
     * @return bytes
     */
    public long available() {
        if (!containerLimited()) {
            return physicalAvailable;
        }
        long left = Math.max(0, limit - Math.max(0, usage));
        return physicalAvailable < 0 ? left : Math.min(physicalAvailable, left);
    }

    /**
     * Whether data of this size can stay in the page cache beside this process: at most the memory it can still get
     * ({@link #available()}). Unknown memory counts as room.
     *
     * @param bytes the data's size
     * @return true when it fits
     */
    public boolean fitsInMemory(long bytes) {
        long room = available();
        return room < 0 || bytes <= room;
    }

    /**
     * The memory this process may use in all: the container limit, or the machine's RAM.
     *
     * @return bytes, or -1 when unknown
     */
    public long total() {
        return containerLimited() ? limit : physicalTotal;
    }

    /**
     * The available memory in words, saying where a limit comes from.
     *
     * @return such as {@code "1.4 GiB available (container limit 2.0 GiB)"} or {@code "12.3 GiB available (RAM 15.5 GiB)"}
     */
    @Override
    public String toString() {
        if (containerLimited()) {
            return String.format(Locale.ROOT, "%s available (container limit %s)", human(available()),
                    human(limit));
        }
        return String.format(Locale.ROOT, "%s available (RAM %s)", human(available()),
                physicalTotal < 0 ? "unknown" : human(physicalTotal));
    }

    private static List<String> lines(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }

    /** One "name value" line of a memory.stat file, or -1 when the file or the line is missing. */
    private static long statistic(Path file, String name) {
        for (String line : lines(file)) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length == 2 && parts[0].equals(name)) {
                try {
                    return Long.parseLong(parts[1]);
                } catch (NumberFormatException e) {
                    return -1;
                }
            }
        }
        return -1;
    }

    /** A file holding one number; "max" (cgroup v2's "no limit"), a missing file or anything else is -1. */
    private static long number(Path file) {
        List<String> lines = lines(file);
        if (lines.isEmpty()) {
            return -1;
        }
        try {
            return Long.parseLong(lines.getFirst().trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static long kibibytes(String meminfoLine) {
        String digits = meminfoLine.replaceAll("[^0-9]", "");
        return digits.isEmpty() ? -1 : Long.parseLong(digits) * 1024;
    }

    /**
     * Bytes for people, in binary units with one decimal: {@code 1.5 GiB}, {@code 300.0 MiB}, {@code 12.0 KiB}.
     *
     * @param bytes a size
     * @return the size in words
     */
    public static String human(long bytes) {
        if (bytes >= 1L << 30) {
            return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
        }
        return String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0);
    }
}
