package dev.memfit.bench;

import dev.memfit.io.storage.Storage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The disk model's arithmetic, on the disk's own clock (no wall-clock timing): seeks grow with distance, a request
 * continuing where the head is costs only its transfer, the queue is served soonest-first, and the throughput of
 * random reads grows with the queue depth and saturates near cryoDRGN's ~3x at 16.
 */
class SpinningDiskTest {

    private static final long SPAN = 1L << 30;
    private static final SpinningDisk.Model DISK = SpinningDisk.Model.desktop7200(SPAN);

    @Test
    void seeksGrowWithDistanceFromTrackToTrackToFullStroke() {
        assertEquals(0, DISK.seekNanos(0));
        assertEquals(1_000_000, DISK.seekNanos(1), 1_000);
        assertEquals(16_000_000, DISK.seekNanos(SPAN));
        assertTrue(DISK.seekNanos(SPAN / 100) < DISK.seekNanos(SPAN / 10));
        assertEquals(DISK.seekNanos(-SPAN / 3), DISK.seekNanos(SPAN / 3), "either direction");
    }

    @Test
    void aSequentialReadCostsOnlyItsTransfer() {
        SpinningDisk.Head head = new SpinningDisk.Head();
        SpinningDisk.serveNext(DISK, head, List.of(new SpinningDisk.Request(0, 150_000)), 0);
        long after = head.freeAt;
        SpinningDisk.serveNext(DISK, head, List.of(new SpinningDisk.Request(150_000, 150_000)), after);
        assertEquals(after + 1_000_000, head.freeAt, "150 kB at 150 MB/s: 1 ms, no seek, no rotation");
    }

    @Test
    void theQueueIsServedSoonestFirst() {
        SpinningDisk.Head head = new SpinningDisk.Head();
        head.placed = true;
        head.address = SPAN / 2;
        List<SpinningDisk.Request> queue = List.of(new SpinningDisk.Request(0, 4096), new SpinningDisk.Request(SPAN / 2, 4096),
                new SpinningDisk.Request(SPAN - 4096, 4096));
        assertEquals(1, SpinningDisk.serveNext(DISK, head, queue, 0), "the request under the head goes first");
        SpinningDisk.Head probe = new SpinningDisk.Head();
        probe.placed = true;
        probe.address = 123_456_789;
        long start = 5_000_000;
        List<SpinningDisk.Request> random = randomRequests(new SplittableRandom(3), 16);
        long[] ready = random.stream().mapToLong(r -> SpinningDisk.positioning(DISK, probe, r, start)).toArray();
        int chosen = SpinningDisk.serveNext(DISK, probe, random, start);
        for (long other : ready) {
            assertTrue(ready[chosen] <= other, "the chosen request starts no later than any other");
        }
    }

    @Test
    void randomReadThroughputGrowsWithQueueDepthAndSaturatesNearThreeTimes() {
        double one = throughput(1);
        double four = throughput(4);
        double sixteen = throughput(16);
        double sixtyFour = throughput(64);
        assertTrue(one < four && four < sixteen && sixteen < sixtyFour, one + " " + four + " " + sixteen + " " + sixtyFour);
        double speedUp = sixteen / one;
        assertTrue(speedUp > 1.6 && speedUp < 4.5, "16 queued requests: x" + speedUp + " (cryoDRGN reports about 3x with 16 threads)");
        assertTrue(sixtyFour / sixteen < four / one, "gains shrink: x" + four / one + " from 1 to 4, x" + sixtyFour / sixteen
                + " from 16 to 64");
    }

    @Test
    void bytesComeFromTheInnerStorageUnchanged(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("data.bin");
        byte[] content = new byte[64 * 1024];
        new SplittableRandom(1).nextBytes(content);
        Files.write(file, content);
        // a disk 1000x faster than a real one, so the test waits microseconds, not milliseconds
        SpinningDisk.Model fast = new SpinningDisk.Model(1_000, 16_000, 8_333, 150_000_000_000L, content.length);
        try (Storage disk = SpinningDisk.over(Storage.local(), fast); Arena arena = Arena.ofConfined()) {
            MemorySegment into = arena.allocate(4096);
            disk.read(file, 8192, into);
            byte[] expected = new byte[4096];
            System.arraycopy(content, 8192, expected, 0, 4096);
            assertArrayEquals(expected, into.toArray(ValueLayout.JAVA_BYTE));
            assertTrue(disk.describe().contains("simulated spinning disk"), disk.describe());
            disk.close();
            IllegalStateException closed = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                    () -> disk.read(file, 0, into));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
        }
    }

    /** Random 16 KiB reads per second of the disk's clock with {@code depth} requests always queued. */
    private static double throughput(int depth) {
        SplittableRandom random = new SplittableRandom(7);
        SpinningDisk.Head head = new SpinningDisk.Head();
        List<SpinningDisk.Request> queue = new ArrayList<>(randomRequests(random, depth));
        int served = 4_000;
        for (int i = 0; i < served; i++) {
            int chosen = SpinningDisk.serveNext(DISK, head, queue, head.freeAt);
            queue.set(chosen, randomRequests(random, 1).getFirst());
        }
        return served / (head.freeAt / 1e9);
    }

    private static List<SpinningDisk.Request> randomRequests(SplittableRandom random, int count) {
        List<SpinningDisk.Request> requests = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            requests.add(new SpinningDisk.Request(random.nextLong(SPAN / 16_384) * 16_384, 16_384));
        }
        return requests;
    }
}
