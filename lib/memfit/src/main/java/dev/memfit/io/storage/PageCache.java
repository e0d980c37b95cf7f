package dev.memfit.io.storage;

import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The operating system's page cache, seen from one file: how much of it is in RAM, and dropping it so that the next
 * read really comes from storage. Linux only; calls libc through {@code java.lang.foreign}, no root needed.
 */
public final class PageCache {

    private static final int O_RDONLY = 0;
    private static final int POSIX_FADV_DONTNEED = 4;
    /** The kernel's page size ({@code sysconf(_SC_PAGESIZE)}; 4 KiB on x86-64, 16 or 64 KiB on some ARM kernels). */
    public static final long PAGE;

    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle FADVISE;
    private static final MethodHandle MINCORE;
    private static final MethodHandle MADVISE;

    static {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        OPEN = linker.downcallHandle(libc.find("open").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
                Linker.Option.firstVariadicArg(2));
        CLOSE = linker.downcallHandle(libc.find("close").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        FADVISE = linker.downcallHandle(libc.find("posix_fadvise").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        MINCORE = linker.downcallHandle(libc.find("mincore").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        MADVISE = linker.downcallHandle(libc.find("madvise").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        long page = 4096;
        try {
            MethodHandle sysconf = linker.downcallHandle(libc.find("sysconf").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
            long found = (long) sysconf.invokeExact(30);   // _SC_PAGESIZE on Linux
            if (found > 0 && Long.bitCount(found) == 1) {
                page = found;
            }
        } catch (Throwable e) {
            // keep 4 KiB: mincore's and madvise's ranges are then still page multiples on x86-64
        }
        PAGE = page;
    }

    /** How a mapping will be read, for the kernel's read-ahead ({@code madvise}). */
    public enum ReadAdvice {
        /** The kernel's default: a page fault reads the pages around it too (up to the device's read-ahead). */
        NORMAL(0),
        /**
         * Pages in a random order: a fault reads its own page only. Without it, every random row of a file larger than
         * memory costs a read of the device's whole read-ahead window (8 MiB on some virtual disks) around it.
         */
        RANDOM(1),
        /** In file order: aggressive read-ahead, pages dropped soon after they are read. */
        SEQUENTIAL(2),
        /**
         * Done with these pages for now: the mapping lets go of them ({@code MADV_DONTNEED}). For a file mapped
         * read-only the pages stay in the page cache (a later read finds them there or reads them again), but they are
         * no longer mapped, so that reclaiming them under a memory limit is cheap.
         */
        DONE(4);

        private final int advice;

        ReadAdvice(int advice) {
            this.advice = advice;
        }
    }

    /**
     * Tells the kernel how a mapping will be read ({@code madvise}); the range is widened to whole pages. A hint: a
     * kernel that refuses it changes nothing, so the result only says whether it was taken.
     *
     * @param mapping part of a file's memory mapping
     * @param advice how it will be read
     * @return true when the kernel took the advice
     */
    public static boolean advise(MemorySegment mapping, ReadAdvice advice) {
        if (mapping.byteSize() == 0 || !mapping.isNative()) {
            return false;
        }
        long start = mapping.address() & -PAGE;
        long length = mapping.address() + mapping.byteSize() - start;
        try {
            return (int) MADVISE.invokeExact(MemorySegment.ofAddress(start), length, advice.advice) == 0;
        } catch (Throwable e) {
            return false;
        }
    }

    private PageCache() {
    }

    /**
     * Drops a file's clean pages from the page cache ({@code posix_fadvise(POSIX_FADV_DONTNEED)}), after flushing
     * its dirty pages, so that the next read comes from storage.
     *
     * @param file the file
     */
    public static void evict(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            channel.force(false);
        } catch (IOException e) {
            // Read-only files have no dirty pages of ours to flush.
        }
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) OPEN.invokeExact(arena.allocateFrom(file.toAbsolutePath().toString()), O_RDONLY);
            if (fd < 0) {
                throw new MemfitException(file + ": cannot open to drop it from the page cache");
            }
            int result = (int) FADVISE.invokeExact(fd, 0L, 0L, POSIX_FADV_DONTNEED);
            int closed = (int) CLOSE.invokeExact(fd);
            if (result != 0 || closed != 0) {
                throw new MemfitException(file + ": posix_fadvise returned " + result);
            }
        } catch (MemfitException e) {
            throw e;
        } catch (Throwable e) {
            throw new MemfitException(file + ": cannot drop it from the page cache: " + e, e);
        }
    }

    /**
     * Drops several files from the page cache.
     *
     * @param files the files
     */
    public static void evict(Iterable<Path> files) {
        for (Path file : files) {
            evict(file);
        }
    }

    /**
     * How many bytes of a file are in the page cache now ({@code mincore} over a temporary mapping).
     *
     * @param file the file
     * @return resident bytes, a multiple of the page size (at most the file size rounded up)
     */
    public static long residentBytes(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ); Arena arena = Arena.ofConfined()) {
            long size = channel.size();
            if (size == 0) {
                return 0;
            }
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            long pages = (size + PAGE - 1) / PAGE;
            MemorySegment vector = arena.allocate(pages);
            int result = (int) MINCORE.invokeExact(mapping, size, vector);
            if (result != 0) {
                throw new MemfitException(file + ": mincore returned " + result);
            }
            long resident = 0;
            for (long p = 0; p < pages; p++) {
                resident += vector.get(ValueLayout.JAVA_BYTE, p) & 1;
            }
            return resident * PAGE;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map " + file, e);
        } catch (MemfitException e) {
            throw e;
        } catch (Throwable e) {
            throw new MemfitException(file + ": cannot read its page-cache residency: " + e, e);
        }
    }
}
