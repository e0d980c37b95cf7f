package dev.memfit.io.storage;

import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One writer per output, across processes and threads, and the removal of dead writers' temporary files. */
class OutputLockTest {

    @TempDir
    Path dir;

    private List<String> listing(Path folder) throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void aLockHeldByAnotherProcessFailsAtOnceNamingItsPid() throws Exception {
        Path target = dir.resolve("out.npy");
        Process holder = LockHolder.start(target.toString());
        try {
            assertEquals(List.of(".out.npy.lock"), listing(dir), "the lock file beside the output");
            MemfitException held = assertThrows(MemfitException.class, () -> OutputLock.acquire(target));
            assertEquals("another memfit process (pid " + holder.pid() + ") is writing " + target
                    + "; wait for it to finish or stop it, then run again", held.getMessage());
            // the writers that lock their output refuse it too, before writing anything
            MemfitException writer = assertThrows(MemfitException.class,
                    () -> Npy.write(target, NpyHeader.of(DType.FLOAT32, 2), MemorySegment.ofArray(new float[]{1, 2})));
            assertTrue(writer.getMessage().contains("(pid " + holder.pid() + ")"), writer.getMessage());
            assertEquals(List.of(".out.npy.lock"), listing(dir), "no temporary file was made");
        } finally {
            // as kill -9 would: the operating system drops the lock, the lock file stays behind
            holder.destroyForcibly().waitFor();
        }
        assertEquals(List.of(".out.npy.lock"), listing(dir));
        Npy.write(target, NpyHeader.of(DType.FLOAT32, 2), MemorySegment.ofArray(new float[]{1, 2}));
        assertEquals("[1.0, 2.0]", numpy(target));
        assertEquals(List.of("out.npy"), listing(dir), "the stale lock file is taken over and removed on release");
    }

    @Test
    void aFolderIsLockedFromInside() throws Exception {
        Path folder = dir.resolve("shards");
        Process holder = LockHolder.start("--folder", folder.toString());
        try {
            assertEquals(List.of(OutputLock.FOLDER_LOCK), listing(folder));
            MemfitException held = assertThrows(MemfitException.class, () -> OutputLock.acquireFolder(folder));
            assertTrue(held.getMessage().startsWith("another memfit process (pid " + holder.pid() + ") is writing "
                    + folder), held.getMessage());
        } finally {
            holder.getOutputStream().close();   // a clean exit: the holder removes its lock file
            assertEquals(0, holder.waitFor());
        }
        assertEquals(List.of(), listing(folder));

        // a file of the folder written by another process: the folder is refused too, and the other way round
        Path inside = folder.resolve("part.npy");
        Process fileHolder = LockHolder.start(inside.toString());
        try {
            MemfitException busy = assertThrows(MemfitException.class, () -> OutputLock.acquireFolder(folder));
            assertTrue(busy.getMessage().startsWith("another memfit process (pid " + fileHolder.pid() + ") is writing "
                    + inside), busy.getMessage());
            assertEquals(List.of(".part.npy.lock"), listing(folder), "the refused folder lock is gone again");
        } finally {
            fileHolder.destroyForcibly().waitFor();
        }
        Process folderHolder = LockHolder.start("--folder", folder.toString());
        try {
            MemfitException busy = assertThrows(MemfitException.class, () -> OutputLock.acquire(inside));
            assertTrue(busy.getMessage().startsWith("another memfit process (pid " + folderHolder.pid() + ") is writing "
                    + folder + ";"), busy.getMessage());
        } finally {
            folderHolder.destroyForcibly().waitFor();
        }
        Path file = dir.resolve("a-file");
        Files.writeString(file, "x");
        MemfitException notAFolder = assertThrows(MemfitException.class, () -> OutputLock.acquireFolder(file));
        assertTrue(notAFolder.getMessage().contains("expected a folder to write into, found a file"), notAFolder.getMessage());
    }

    @Test
    void locksNestWithinAThreadAndExcludeOtherThreads() throws Exception {
        Path folder = dir.resolve("set");
        Path inside = folder.resolve("part.npy");
        try (OutputLock outer = OutputLock.acquireFolder(folder)) {
            try (OutputLock again = OutputLock.acquireFolder(folder); OutputLock file = OutputLock.acquire(inside)) {
                assertEquals(inside.toAbsolutePath(), file.target());
                assertEquals(outer.lockFile(), file.lockFile(), "a file in a locked folder needs no lock file of its own");
            }
            assertTrue(Files.exists(outer.lockFile()), "closing a nested lock releases nothing");
            MemfitException fromThread = CompletableFuture.supplyAsync(() -> assertThrows(MemfitException.class,
                    () -> OutputLock.acquire(inside))).get();
            assertEquals("another memfit writer (pid " + ProcessHandle.current().pid() + ", another thread of this "
                    + "process) is writing " + folder.toAbsolutePath() + "; wait for it to finish or stop it, then run again",
                    fromThread.getMessage().replace(inside.toAbsolutePath().toString(), folder.toAbsolutePath().toString()));
        }
        assertEquals(List.of(), listing(folder), "the lock file is removed on release");
        try (OutputLock file = OutputLock.acquire(inside)) {
            assertEquals(List.of(".part.npy.lock"), listing(folder), "unlocked, the folder's files lock themselves");
        }
    }

    @Test
    void staleTemporaryFilesOfDeadWritersAreRemovedAndLiveOnesKept() throws Exception {
        Path target = dir.resolve("out.npy");
        long dead = deadPid();
        Process sleeper = new ProcessBuilder("sleep", "600").start();
        try {
            long live = sleeper.pid();
            long self = ProcessHandle.current().pid();
            String otherRun = TempFiles.RUN.equals("00000000") ? "00000001" : "00000000";
            List<String> stale = List.of(
                    ".out.npy." + dead + "-0badcafe-1.partial",             // a dead process's
                    ".out.npy." + self + "-" + otherRun + "-3.partial",      // an earlier process with our pid
                    ".out.npy.partial",                                     // earlier versions: no owner
                    ".out.npy.8842310974432.partial",
                    "out.npy.tmp-" + dead);
            String liveOther = ".out.npy." + live + "-0badcafe-2.partial";  // a running process's
            Path ours = TempFiles.beside(target);                           // this run's own
            String otherTarget = ".other.npy." + dead + "-0badcafe-1.partial";
            for (String name : stale) {
                Files.writeString(dir.resolve(name), "stale");
            }
            Files.writeString(dir.resolve(liveOther), "live");
            Files.writeString(ours, "ours");
            Files.writeString(dir.resolve(otherTarget), "another output's");
            stale.forEach(name -> assertTrue(TempFiles.isTemporary(name) && TempFiles.isStale(name), name));
            assertFalse(TempFiles.isStale(liveOther));
            assertFalse(TempFiles.isStale(ours.getFileName().toString()));

            Npy.write(target, NpyHeader.of(DType.FLOAT32, 1), MemorySegment.ofArray(new float[]{7}));
            assertEquals(List.of(ours.getFileName().toString(), liveOther, otherTarget, "out.npy").stream().sorted().toList(),
                    listing(dir), "only the output's stale files are removed");
            Files.delete(ours);

            sleeper.destroyForcibly().waitFor();
            assertTrue(TempFiles.isStale(liveOther), "its process has ended");
            Npy.write(target, NpyHeader.of(DType.FLOAT32, 1), MemorySegment.ofArray(new float[]{8}));
            assertEquals(List.of(otherTarget, "out.npy"), listing(dir));
            assertEquals("[8.0]", numpy(target));
        } finally {
            sleeper.destroyForcibly();
        }
    }

    @Test
    void temporaryNamesAreUniqueAndSayWhoseTheyAre() {
        Path target = dir.resolve("data.h5");
        Path a = TempFiles.beside(target);
        Path b = TempFiles.beside(target, "indices");
        assertFalse(a.equals(b));
        String prefix = ".data.h5." + ProcessHandle.current().pid() + "-" + TempFiles.RUN + "-";
        assertTrue(a.getFileName().toString().startsWith(prefix) && a.toString().endsWith(".partial"), a.toString());
        assertTrue(b.getFileName().toString().startsWith(prefix) && b.toString().endsWith(".indices.partial"), b.toString());
        assertEquals("data.h5", TempFiles.targetOf(b.getFileName().toString()));
        assertEquals(dir.toAbsolutePath(), a.getParent(), "beside the target: the rename stays on one file system");
        assertFalse(TempFiles.isTemporary("data.h5") || TempFiles.isTemporary("shard_000001.parquet"));
    }

    /** The values of a {@code .npy} as numpy reads them. */
    private static String numpy(Path file) {
        return PythonPeer.run("import sys, numpy as np; print(np.load(sys.argv[1]).tolist())", file);
    }

    /** The pid of a process that has exited. */
    private static long deadPid() throws Exception {
        Process done = new ProcessBuilder("true").start();
        done.waitFor();
        assertFalse(ProcessHandle.of(done.pid()).map(ProcessHandle::isAlive).orElse(false));
        return done.pid();
    }
}
