package dev.memfit.io.storage;

import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One writer at a time per output: an exclusive {@link FileChannel#tryLock() file lock} on a lock file that holds the
 * writer's pid, taken before anything is written and released (the lock file deleted) when the writer is done.
 *
 * <p>A file {@code DIR/NAME} is locked through {@code DIR/.NAME.lock}; a folder (a shard set, a folder of stacks)
 * through {@code FOLDER/.memfit.lock} inside it, so the lock travels with the folder and a reader of the folder
 * knows the name ({@link #FOLDER_LOCK}). When the lock is held by another process, or by another thread of this
 * one, {@link #acquire} fails at once with a {@link MemfitException} naming the holder's pid and the output. The
 * operating system drops the lock of a process that dies (even by {@code kill -9}), so a stale lock file never
 * blocks a later run.
 *
 * <p>Taking a lock also removes the output's stale temporary files ({@link TempFiles#removeStale}): a writer that
 * holds the lock is the only one that could be writing them.
 *
 * <p>Locks nest within one thread: locking an output this thread already holds, or a file inside a folder this
 * thread holds, returns a handle that releases nothing, so a command can lock its output up front and the writers it
 * calls can lock theirs without conflict (and without another lock file per shard). A file inside a folder that
 * another writer holds is refused like the folder itself, and so is a folder holding a file another writer holds.
 *
 * <pre>{@code
 * try (OutputLock lock = OutputLock.acquire(Path.of("data.h5"))) {
 *     Path temporary = TempFiles.beside(lock.target());
 *     ... write temporary, then AtomicMove.replace(temporary, lock.target())
 * }
 * }</pre>
 */
public final class OutputLock implements AutoCloseable {

    /** The lock file inside a locked folder. */
    public static final String FOLDER_LOCK = ".memfit.lock";
    private static final long PID = ProcessHandle.current().pid();
    private static final AtomicLong COUNTER = new AtomicLong();
    /**
     * Locks held by this JVM, by lock file: the file lock alone cannot tell this thread's from another's. Taking and
     * releasing locks is synchronized on the class: a descriptor of a lock file opened and closed by one thread
     * (to probe or verify it) would otherwise drop a POSIX lock another thread of this process had just taken.
     */
    private static final Map<Path, OutputLock> HELD = new ConcurrentHashMap<>();

    private final Path target;
    private final Path lockFile;
    private final Thread owner;
    private final FileChannel channel;
    /** A second descriptor of the lock file, open until release (see {@link #lock}). */
    private final FileChannel verifier;
    private final FileLock lock;
    private final OutputLock outer;
    private List<Path> removed = List.of();
    private boolean closed;

    private OutputLock(Path target, Path lockFile, FileChannel channel, FileChannel verifier, FileLock lock,
                       OutputLock outer) {
        this.target = target;
        this.lockFile = lockFile;
        this.owner = Thread.currentThread();
        this.channel = channel;
        this.verifier = verifier;
        this.lock = lock;
        this.outer = outer;
    }

    /**
     * Locks a file output through {@code .NAME.lock} beside it (its folder is created when missing), then removes
     * the output's stale temporary files.
     *
     * @param file the output file
     * @return the lock, to be closed when the output is written (or given up)
     * @throws MemfitException "another memfit process (pid N) is writing FILE" when another writer holds it
     */
    public static synchronized OutputLock acquire(Path file) {
        Path target = file.toAbsolutePath().normalize();
        Path folder = target.getParent();
        Path folderLock = folder.resolve(FOLDER_LOCK);
        OutputLock covering = HELD.get(folderLock);
        if (covering != null) {
            if (covering.owner == Thread.currentThread()) {
                return covering.nested(target);
            }
            throw held(folder, PID, true);
        }
        long folderHolder = holderOf(folderLock);
        if (folderHolder != 0) {
            throw held(folder, folderHolder, false);
        }
        return lock(target, folder, folder.resolve("." + target.getFileName() + ".lock"), target.getFileName().toString());
    }

    /**
     * Locks a folder output through {@code FOLDER/.memfit.lock} (the folder is created when missing), then removes
     * every stale temporary file in the folder.
     *
     * @param folder the output folder
     * @return the lock, to be closed when the folder is written
     * @throws MemfitException "another memfit process (pid N) is writing FOLDER" when another writer holds it
     */
    public static synchronized OutputLock acquireFolder(Path folder) {
        Path target = folder.toAbsolutePath().normalize();
        if (Files.exists(target) && !Files.isDirectory(target)) {
            throw new MemfitException(target + ": expected a folder to write into, found a file; name a folder");
        }
        return lock(target, target, target.resolve(FOLDER_LOCK), null);
    }

    private static OutputLock lock(Path target, Path folder, Path lockFile, String targetName) {
        OutputLock mine = HELD.get(lockFile);
        if (mine != null) {
            if (mine.owner == Thread.currentThread()) {
                return mine.nested(target);
            }
            throw held(target, PID, true);
        }
        try {
            Files.createDirectories(folder);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + folder + " to write " + target, e);
        }
        String token = PID + " " + TempFiles.RUN + "-" + COUNTER.incrementAndGet() + "\n";
        // A few attempts: a lock taken on a lock file that its holder deleted meanwhile locks nothing (see below).
        for (int attempt = 0; attempt < 10; attempt++) {
            FileChannel channel = null;
            try {
                channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.READ,
                        StandardOpenOption.WRITE);
                FileLock lock;
                try {
                    lock = channel.tryLock();
                } catch (OverlappingFileLockException e) {
                    // this JVM holds it through another path to the same file (a link)
                    channel.close();
                    throw held(target, PID, true);
                }
                if (lock == null) {
                    long pid = readPid(channel);
                    channel.close();
                    throw held(target, pid, false);
                }
                channel.truncate(0);
                channel.write(ByteBuffer.wrap(token.getBytes(StandardCharsets.US_ASCII)), 0);
                channel.force(false);
                // The holder deletes the lock file before it releases the lock: if ours is such a deleted file,
                // the name now points to another file (or none) and our lock excludes nobody. Try again. The name is
                // read through a channel kept open until release: closing any descriptor of a file drops all of
                // the process's POSIX locks on it, ours included.
                FileChannel verifier = openQuietly(lockFile);
                if (verifier == null || !token.equals(readAll(verifier))) {
                    closeQuietly(verifier);
                    lock.release();
                    channel.close();
                    continue;
                }
                OutputLock acquired = new OutputLock(target, lockFile, channel, verifier, lock, null);
                HELD.put(lockFile, acquired);
                try {
                    if (targetName == null) {
                        refuseFilesWrittenByOthers(target);
                    }
                    acquired.removed = List.copyOf(TempFiles.removeStale(folder, targetName));
                } catch (RuntimeException e) {
                    acquired.close();
                    throw e;
                }
                return acquired;
            } catch (IOException e) {
                closeQuietly(channel);
                throw new UncheckedIOException("cannot lock " + target + " through " + lockFile, e);
            }
        }
        throw new MemfitException(target + ": could not take the lock " + lockFile + " after 10 attempts: other "
                + "processes keep taking and releasing it; run one writer at a time");
    }

    /**
     * Refuses a folder in which another writer holds a file's own lock ({@code .NAME.lock}): a folder lock must not
     * be taken over a file being written, nor its temporary file removed.
     */
    private static void refuseFilesWrittenByOthers(Path folder) {
        try (DirectoryStream<Path> locks = Files.newDirectoryStream(folder, ".*.lock")) {
            for (Path fileLock : locks) {
                String name = fileLock.getFileName().toString();
                if (name.equals(FOLDER_LOCK)) {
                    continue;
                }
                Path file = folder.resolve(name.substring(1, name.length() - ".lock".length()));
                OutputLock mine = HELD.get(fileLock);
                if (mine != null) {
                    if (mine.owner != Thread.currentThread()) {
                        throw held(file, PID, true);
                    }
                    continue;
                }
                long holder = holderOf(fileLock);
                if (holder != 0) {
                    throw held(file, holder, false);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + folder, e);
        }
    }

    /**
     * Whether another process holds a lock: 0 when nobody does (or there is no lock file), else the holder's pid (-1
     * when it cannot be read). A free lock is taken and dropped at once, the file left as it is.
     */
    private static long holderOf(Path folderLock) {
        if (!Files.exists(folderLock)) {
            return 0;
        }
        try (FileChannel channel = FileChannel.open(folderLock, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            FileLock probe = channel.tryLock();
            if (probe != null) {
                probe.release();
                return 0;
            }
            return readPid(channel);
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException | OverlappingFileLockException e) {
            return 0;
        }
    }

    private static MemfitException held(Path target, long pid, boolean thisProcess) {
        String who = thisProcess ? "another memfit writer (pid " + pid + ", another thread of this process)"
                : "another memfit process (pid " + (pid < 0 ? "unknown" : Long.toString(pid)) + ")";
        return new MemfitException(who + " is writing " + target + "; wait for it to finish or stop it, then run again");
    }

    /** The pid a holder wrote; it writes right after locking, so an empty file is given a moment. */
    private static long readPid(FileChannel channel) throws IOException {
        for (int attempt = 0; attempt < 20; attempt++) {
            ByteBuffer buffer = ByteBuffer.allocate(64);
            channel.read(buffer, 0);
            String text = new String(buffer.array(), 0, buffer.position(), StandardCharsets.US_ASCII).strip();
            int space = text.indexOf(' ');
            if (space > 0) {
                try {
                    return Long.parseLong(text.substring(0, space));
                } catch (NumberFormatException e) {
                    return -1;
                }
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return -1;
            }
        }
        return -1;
    }

    private static FileChannel openQuietly(Path file) {
        try {
            return FileChannel.open(file, StandardOpenOption.READ);
        } catch (IOException e) {
            return null;
        }
    }

    private static String readAll(FileChannel channel) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(128);
        channel.read(buffer, 0);
        return new String(buffer.array(), 0, buffer.position(), StandardCharsets.US_ASCII);
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // reporting the first failure
            }
        }
    }

    private OutputLock nested(Path nestedTarget) {
        return new OutputLock(nestedTarget, lockFile, null, null, null, this);
    }

    /**
     * The locked output.
     *
     * @return its absolute path
     */
    public Path target() {
        return target;
    }

    /**
     * The lock file.
     *
     * @return its path
     */
    public Path lockFile() {
        return lockFile;
    }

    /**
     * The stale temporary files removed when the lock was taken (for a nested handle, those its outer lock removed).
     *
     * @return the files removed
     */
    public List<Path> removedTemporaries() {
        return outer != null ? outer.removedTemporaries() : removed;
    }

    /**
     * Releases the lock and deletes the lock file (a nested handle releases nothing).
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (outer != null) {
            return;
        }
        synchronized (OutputLock.class) {
            HELD.remove(lockFile, this);
            try {
                // delete before releasing: a waiting writer then finds the name gone or its own new file
                Files.deleteIfExists(lockFile);
            } catch (IOException ignored) {
                // a lock file left behind is harmless: the next writer locks it again
            }
            try {
                lock.release();
            } catch (IOException ignored) {
                // closing the channel releases it too
            }
            closeQuietly(channel);
            closeQuietly(verifier);
        }
    }
}
