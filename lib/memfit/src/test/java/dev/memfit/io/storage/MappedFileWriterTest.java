package dev.memfit.io.storage;

import dev.memfit.NativeMemory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** {@link MappedFileWriter}: what a committed file holds, and that nothing else is ever left behind. */
class MappedFileWriterTest {

    @TempDir
    Path dir;

    private static byte[] bytes(int count, long seed) {
        byte[] bytes = new byte[count];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    /** Every name in the folder, sorted; temporary files start with a dot, so they show up here. */
    private List<String> listing(Path folder) throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void aCommittedFileHoldsExactlyTheHeaderAndTheData() throws IOException {
        Path target = dir.resolve("out.bin");
        byte[] header = bytes(37, 1); // an odd length: the data region starts unaligned in the file
        byte[] data = bytes(10_000, 2);
        long mappedBefore = NativeMemory.MAPPED.bytes();
        try (MappedFileWriter writer = MappedFileWriter.open(target, header, data.length)) {
            assertEquals(target, writer.target());
            assertEquals(data.length, writer.data().byteSize());
            assertEquals(mappedBefore + data.length, NativeMemory.MAPPED.bytes(), "the mapping is counted while open");
            // written under a temporary name in the same folder; the target does not exist yet
            assertFalse(Files.exists(target));
            // beside it: the lock, and the temporary file named for this process (pid, run tag, counter)
            List<String> during = listing(dir);
            assertEquals(2, during.size(), during.toString());
            assertEquals(".out.bin.lock", during.get(1), during.toString());
            assertTrue(during.getFirst().startsWith(".out.bin." + ProcessHandle.current().pid() + "-")
                    && during.getFirst().endsWith(".partial"), during.toString());

            MemorySegment.copy(data, 0, writer.data(), ValueLayout.JAVA_BYTE, 0, data.length);
            // a header known only at the end: the first bytes change, the rest of the header stays
            writer.rewriteHeader(new byte[]{'N', 'E', 'W'});
            assertEquals(target, writer.commit());
            assertEquals(mappedBefore, NativeMemory.MAPPED.bytes(), "commit releases the mapping");
        }
        assertEquals(mappedBefore, NativeMemory.MAPPED.bytes(), "close after commit does not release it twice");

        byte[] file = Files.readAllBytes(target);
        byte[] want = new byte[header.length + data.length];
        System.arraycopy(header, 0, want, 0, header.length);
        System.arraycopy(new byte[]{'N', 'E', 'W'}, 0, want, 0, 3);
        System.arraycopy(data, 0, want, header.length, data.length);
        assertArrayEquals(want, file);
        assertEquals(List.of("out.bin"), listing(dir), "no temporary file left after commit");
        if (Files.getFileStore(target).supportsFileAttributeView("posix")) {
            // temporary files are private (0600); a finished one is readable like any data file
            assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(target)));
        }
    }

    @Test
    void closingWithoutCommitDeletesTheTemporaryFileAndLeavesTheTargetAlone() throws IOException {
        Path target = dir.resolve("kept.bin");
        byte[] first = bytes(4096, 3);
        try (MappedFileWriter writer = MappedFileWriter.open(target, new byte[]{1, 2}, first.length)) {
            MemorySegment.copy(first, 0, writer.data(), ValueLayout.JAVA_BYTE, 0, first.length);
            writer.commit();
        }
        byte[] committed = Files.readAllBytes(target);

        // a second write to the same name that fails half-way: the first file survives, byte for byte
        long mappedBefore = NativeMemory.MAPPED.bytes();
        IllegalStateException failure = assertThrows(IllegalStateException.class, () -> {
            try (MappedFileWriter writer = MappedFileWriter.open(target, new byte[]{9, 9, 9}, 100)) {
                writer.data().fill((byte) 7);
                writer.rewriteHeader(new byte[]{8});
                throw new IllegalStateException("interrupted");
            }
        });
        assertEquals("interrupted", failure.getMessage());
        assertArrayEquals(committed, Files.readAllBytes(target));
        assertEquals(List.of("kept.bin"), listing(dir), "no temporary file left after an abandoned write");
        assertEquals(mappedBefore, NativeMemory.MAPPED.bytes(), "close without commit releases the mapping");

        // and an abandoned first write leaves nothing at all
        Path never = dir.resolve("never.bin");
        MappedFileWriter writer = MappedFileWriter.open(never, new byte[]{1}, 10);
        writer.close();
        writer.close(); // a second close is harmless and releases nothing more
        assertFalse(Files.exists(never));
        assertEquals(List.of("kept.bin"), listing(dir));
        assertEquals(mappedBefore, NativeMemory.MAPPED.bytes());
        assertThrows(IllegalStateException.class, writer::commit, "commit after close");
    }

    @Test
    void aCommitReplacesAnExistingFileAndCannotBeRepeated() throws IOException {
        Path target = dir.resolve("replaced.bin");
        Files.write(target, bytes(50_000, 4)); // longer than the new file: nothing of it may remain
        MappedFileWriter writer = MappedFileWriter.open(target, "HDR".getBytes(StandardCharsets.US_ASCII), 4);
        writer.data().set(ValueLayout.JAVA_INT_UNALIGNED, 0, 0x0403_0201);
        writer.commit();
        assertThrows(IllegalStateException.class, writer::commit, "a second commit");
        writer.close(); // after commit: keeps the file
        assertArrayEquals(new byte[]{'H', 'D', 'R', 1, 2, 3, 4}, Files.readAllBytes(target));
        assertEquals(List.of("replaced.bin"), listing(dir));
    }

    @Test
    void missingFoldersAreCreated() throws IOException {
        Path target = dir.resolve("a/b/c/file.bin");
        try (MappedFileWriter writer = MappedFileWriter.open(target, new byte[]{5}, 1)) {
            writer.data().set(ValueLayout.JAVA_BYTE, 0, (byte) 6);
            writer.commit();
        }
        assertArrayEquals(new byte[]{5, 6}, Files.readAllBytes(target));
        assertEquals(List.of("file.bin"), listing(target.getParent()));
    }

    @Test
    void zeroLengthDataAndHeader() throws IOException {
        long mappedBefore = NativeMemory.MAPPED.bytes();
        Path headerOnly = dir.resolve("header-only.bin");
        try (MappedFileWriter writer = MappedFileWriter.open(headerOnly, new byte[]{1, 2, 3}, 0)) {
            assertEquals(0, writer.data().byteSize());
            writer.commit();
        }
        assertArrayEquals(new byte[]{1, 2, 3}, Files.readAllBytes(headerOnly));

        Path empty = dir.resolve("empty.bin");
        try (MappedFileWriter writer = MappedFileWriter.open(empty, new byte[0], 0)) {
            writer.commit();
        }
        assertEquals(0, Files.size(empty));

        Path dataOnly = dir.resolve("data-only.bin");
        try (MappedFileWriter writer = MappedFileWriter.open(dataOnly, new byte[0], 3)) {
            writer.data().set(ValueLayout.JAVA_BYTE, 2, (byte) 9);
            writer.commit();
        }
        assertArrayEquals(new byte[]{0, 0, 9}, Files.readAllBytes(dataOnly), "unwritten data reads as zeros");

        Path abandoned = dir.resolve("abandoned.bin");
        MappedFileWriter.open(abandoned, new byte[]{1}, 0).close();
        assertEquals(List.of("data-only.bin", "empty.bin", "header-only.bin"), listing(dir));
        assertEquals(mappedBefore, NativeMemory.MAPPED.bytes());
    }

    /** Blocks actually allocated to a file, from stat(1), or -1 when that cannot be asked. */
    private static long allocatedBytes(Path file) {
        try {
            Process stat = new ProcessBuilder("stat", "-c", "%b %B", file.toString()).redirectErrorStream(true).start();
            String[] out = new String(stat.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim().split(" ");
            return stat.waitFor() == 0 && out.length == 2 ? Long.parseLong(out[0]) * Long.parseLong(out[1]) : -1;
        } catch (IOException | NumberFormatException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    @Test
    void aLargeFileIsSparse() throws IOException {
        long size = 6L << 30; // 6 GiB: past 2^32, so offsets must be longs everywhere
        // only where the file system keeps files sparse: elsewhere this would write gigabytes of zeros
        Path probe = dir.resolve("probe");
        try (FileChannel channel = FileChannel.open(probe, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.allocate(1), size);
        } catch (IOException e) {
            assumeTrue(false, "file system refuses a " + size + "-byte file: " + e);
        }
        long probeBlocks = allocatedBytes(probe);
        Files.delete(probe);
        assumeTrue(probeBlocks >= 0 && probeBlocks < (1 << 20), "file system does not keep files sparse (" + probeBlocks + " bytes allocated)");

        Path target = dir.resolve("large.bin");
        byte[] header = {'L', 'A', 'R', 'G', 'E'};
        long mappedBefore = NativeMemory.MAPPED.bytes();
        long[] offsets = {0, (1L << 32) - 1, (1L << 32) + 3, size - 1};
        try (MappedFileWriter writer = MappedFileWriter.open(target, header, size)) {
            assertEquals(size, writer.data().byteSize());
            assertEquals(mappedBefore + size, NativeMemory.MAPPED.bytes());
            for (int i = 0; i < offsets.length; i++) {
                writer.data().set(ValueLayout.JAVA_BYTE, offsets[i], (byte) (0x10 + i));
            }
            writer.commit();
        }
        assertEquals(mappedBefore, NativeMemory.MAPPED.bytes());
        assertEquals(header.length + size, Files.size(target));
        try (FileChannel channel = FileChannel.open(target, StandardOpenOption.READ)) {
            ByteBuffer start = ByteBuffer.allocate(header.length);
            channel.read(start, 0);
            assertArrayEquals(header, start.array());
            for (int i = 0; i < offsets.length; i++) {
                assertEquals(0x10 + i, byteAt(channel, header.length + offsets[i]), "data offset " + offsets[i]);
            }
            // unwritten bytes between them read as zeros
            assertEquals(0, byteAt(channel, header.length + offsets[1] - 1));
            assertEquals(0, byteAt(channel, header.length + offsets[2] + 1));
            assertEquals(0, byteAt(channel, header.length + size - 2));
        }
        assertTrue(allocatedBytes(target) < (64 << 20), "a few written pages, not gigabytes: " + allocatedBytes(target));
        assertEquals(List.of("large.bin"), listing(dir));
    }

    private static int byteAt(FileChannel channel, long position) throws IOException {
        ByteBuffer one = ByteBuffer.allocate(1);
        assertEquals(1, channel.read(one, position), "a byte at " + position);
        return one.get(0);
    }

    @Test
    void aSizeTheFileSystemCannotTakeFailsCleanly() throws IOException {
        long mappedBefore = NativeMemory.MAPPED.bytes();
        Path target = dir.resolve("impossible.bin");
        // 1 EiB: over ext4's and tmpfs's limits, or failing to map where the file system takes it
        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> MappedFileWriter.open(target, new byte[]{1}, 1L << 60));
        assertTrue(e.getMessage().contains("cannot create"), e.getMessage());
        assertEquals(List.of(), listing(dir), "the temporary file is deleted");
        assertEquals(mappedBefore, NativeMemory.MAPPED.bytes());

        // a folder that cannot be created (a file is in the way)
        Files.writeString(dir.resolve("file"), "x");
        assertThrows(UncheckedIOException.class, () -> MappedFileWriter.open(dir.resolve("file/out.bin"), new byte[0], 1));
        assertEquals(List.of("file"), listing(dir));
    }
}
