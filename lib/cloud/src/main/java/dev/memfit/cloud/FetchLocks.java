package dev.memfit.cloud;

import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One lock per block being downloaded into a cache folder, shared by every process and every cache on the folder,
 * so that a block is downloaded once while the others wait for it.
 *
 * <p>A lock is one byte of {@code FOLDER/}{@value #FILE}, at an offset hashed from the block's name in the folder,
 * locked with {@link FileChannel#tryLock(long, long, boolean)}: the operating system releases it when its process
 * dies, so a download killed half-way never blocks the others, and nothing is ever deleted (no waiter can be left on
 * a lock file that another process removed and made again). Java's file locks belong to the whole JVM, so the
 * caches of one JVM first take the block's name in a map of this class; the file is opened once per JVM and folder
 * and closed when its last cache closes, because closing any channel of a file drops every lock the process holds on
 * it. Waiting polls (a lock call that blocks would close the shared channel when its thread is interrupted, and
 * with it every other lock) and ends early when the block appears.
 */
final class FetchLocks {

    /** The lock file in the cache folder. */
    static final String FILE = ".fetch.lock";
    /** How long a fetch waits for another one before downloading the block itself (a process stopped, not dead). */
    static final long PATIENCE_NANOS = 10L * 60 * 1_000_000_000L;
    private static final Map<Path, FetchLocks> OPEN = new HashMap<>();

    private final Path folder;
    private final FileChannel channel;
    private final Set<Long> inThisJvm = ConcurrentHashMap.newKeySet();
    private int users;

    private FetchLocks(Path folder, FileChannel channel) {
        this.folder = folder;
        this.channel = channel;
    }

    /**
     * The locks of a folder, opened by the first cache of this JVM on it; {@link #close} once per call.
     *
     * @param folder the cache folder (absolute, normalized)
     * @return its locks
     */
    static FetchLocks open(Path folder) {
        synchronized (OPEN) {
            FetchLocks locks = OPEN.get(folder);
            if (locks == null) {
                try {
                    locks = new FetchLocks(folder, FileChannel.open(folder.resolve(FILE), StandardOpenOption.CREATE,
                            StandardOpenOption.WRITE));
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot open the lock file " + folder.resolve(FILE), e);
                }
                OPEN.put(folder, locks);
            }
            locks.users++;
            return locks;
        }
    }

    /** Ends one {@link #open}: the last one closes the file (no lock is held by then). */
    void close() {
        synchronized (OPEN) {
            if (--users > 0) {
                return;
            }
            OPEN.remove(folder, this);
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing held: the descriptor goes with the process at worst
            }
        }
    }

    /** A block's lock while held; closing releases it. */
    interface Held extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Takes the lock of a block, waiting while another process or cache holds it (downloads it); returns early,
     * without the lock, when the block appears meanwhile, and after {@link #PATIENCE_NANOS} (then both download).
     *
     * @param file the block's file
     * @return the lock (or nothing, when returning early)
     * @throws MemfitException when interrupted
     */
    Held lock(Path file) {
        // one byte below 2^31 (no file system has trouble with such offsets); the caches of this JVM take the same
        // number first, so that they never ask for one byte twice (Java refuses overlapping locks within a JVM)
        long region = key(folder.relativize(file).toString()) >>> 33;
        long deadline = System.nanoTime() + PATIENCE_NANOS;
        long sleep = 1;
        boolean mine = false;
        try {
            while (!inThisJvm.add(region)) {
                if (Files.exists(file) || System.nanoTime() > deadline) {
                    return () -> { };
                }
                Thread.sleep(sleep);
                sleep = Math.min(2 * sleep, 20);
            }
            mine = true;
            while (true) {
                FileLock lock;
                try {
                    lock = channel.tryLock(region, 1, false);
                } catch (IOException | OverlappingFileLockException e) {
                    return release(region, null); // no file lock to be had (closed, unsupported): at worst two downloads
                }
                if (lock != null || Files.exists(file) || System.nanoTime() > deadline) {
                    return release(region, lock);
                }
                Thread.sleep(sleep);
                sleep = Math.min(2 * sleep, 20);
            }
        } catch (InterruptedException e) {
            if (mine) {
                inThisJvm.remove(region);
            }
            Thread.currentThread().interrupt();
            throw new MemfitException("interrupted while waiting for another download of " + file, e);
        } catch (RuntimeException | Error e) {
            if (mine) {
                inThisJvm.remove(region);
            }
            throw e;
        }
    }

    private Held release(long region, FileLock lock) {
        return () -> {
            try {
                if (lock != null && lock.isValid()) {
                    lock.release();
                }
            } catch (IOException ignored) {
                // released with the channel or the process at worst
            } finally {
                inThisJvm.remove(region);
            }
        };
    }

    /** A 64-bit FNV-1a hash of a block's name in the folder, the same in every process. */
    static long key(String name) {
        long hash = 0xcbf29ce484222325L;
        for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
            hash ^= b & 0xff;
            hash *= 0x100000001b3L;
        }
        return hash ^ (hash >>> 29);
    }
}
