package dev.memfit;

import dev.memfit.memory.Advice;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The memory this process may use, read from fake {@code /proc} and {@code /sys} trees laid out as Linux lays them
 * out with cgroup v1 and v2, limited and not.
 */
class ProcessMemoryTest {

    private static final long GIB = 1L << 30;
    private static final long MIB = 1L << 20;

    /** A 64 GiB host with 48 GiB available, as /proc/meminfo writes it (kB meaning KiB). */
    private static void meminfo(Path root) throws IOException {
        write(root.resolve("proc/meminfo"), """
                MemTotal:       67108864 kB
                MemFree:        20000000 kB
                MemAvailable:   50331648 kB
                Buffers:          123456 kB
                """);
    }

    private static void write(Path file, String text) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, text);
    }

    @Test
    void cgroupV2LimitBelowTheRamIsTheContainersMemory(@TempDir Path root) throws IOException {
        meminfo(root);
        write(root.resolve("proc/self/cgroup"), "0::/user.slice/binder.scope\n");
        write(root.resolve("sys/fs/cgroup/user.slice/binder.scope/memory.max"), (2 * GIB) + "\n");
        write(root.resolve("sys/fs/cgroup/user.slice/binder.scope/memory.current"), (600 * MIB) + "\n");
        ProcessMemory memory = ProcessMemory.read(root);
        assertTrue(memory.containerLimited());
        assertEquals(64 * GIB, memory.physicalTotal());
        assertEquals(48 * GIB, memory.physicalAvailable());
        assertEquals(2 * GIB, memory.limit());
        assertEquals(2 * GIB, memory.total());
        assertEquals(2 * GIB - 600 * MIB, memory.available());
        assertEquals("1.4 GiB available (container limit 2.0 GiB)", memory.toString());
        Advice.Machine machine = Advice.Machine.of(memory);
        assertEquals(2 * GIB - 600 * MIB, machine.availableRam());
        assertEquals("1.4 GiB (container limit 2.0 GiB)", machine.ramText());
    }

    @Test
    void cgroupV2MaxMeansTheHostsMemory(@TempDir Path root) throws IOException {
        meminfo(root);
        write(root.resolve("proc/self/cgroup"), "0::/\n");
        write(root.resolve("sys/fs/cgroup/memory.max"), "max\n");
        write(root.resolve("sys/fs/cgroup/memory.current"), (600 * MIB) + "\n");
        ProcessMemory memory = ProcessMemory.read(root);
        assertFalse(memory.containerLimited());
        assertEquals(-1, memory.limit());
        assertEquals(48 * GIB, memory.available());
        assertEquals(64 * GIB, memory.total());
        assertEquals("48.0 GiB available (RAM 64.0 GiB)", memory.toString());
        assertEquals("48.0 GiB", Advice.Machine.of(memory).ramText());
    }

    @Test
    void cgroupV2ParentsSmallerLimitApplies(@TempDir Path root) throws IOException {
        meminfo(root);
        write(root.resolve("proc/self/cgroup"), "0::/kubepods/pod1/container\n");
        write(root.resolve("sys/fs/cgroup/kubepods/pod1/container/memory.max"), "max\n");
        write(root.resolve("sys/fs/cgroup/kubepods/pod1/container/memory.current"), (100 * MIB) + "\n");
        write(root.resolve("sys/fs/cgroup/kubepods/pod1/memory.max"), (1536 * MIB) + "\n");
        write(root.resolve("sys/fs/cgroup/kubepods/pod1/memory.current"), (512 * MIB) + "\n");
        write(root.resolve("sys/fs/cgroup/kubepods/memory.max"), (8 * GIB) + "\n");
        write(root.resolve("sys/fs/cgroup/kubepods/memory.current"), (3 * GIB) + "\n");
        ProcessMemory memory = ProcessMemory.read(root);
        assertEquals(1536 * MIB, memory.limit());
        // the usage counted against the limit is the limiting cgroup's, the pod's (its sibling containers too)
        assertEquals(512 * MIB, memory.usage());
        assertEquals(GIB, memory.available());
    }

    @Test
    void cgroupV1Limit(@TempDir Path root) throws IOException {
        meminfo(root);
        write(root.resolve("proc/self/cgroup"), """
                12:pids:/docker/abc
                11:cpu,cpuacct:/docker/abc
                9:memory:/docker/abc
                0::/docker/abc
                """);
        write(root.resolve("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"), (2 * GIB) + "\n");
        write(root.resolve("sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes"), (GIB) + "\n");
        ProcessMemory memory = ProcessMemory.read(root);
        assertEquals(2 * GIB, memory.limit());
        assertEquals(GIB, memory.usage());
        assertEquals(GIB, memory.available());
        // page cache the container just read counts in the usage, but its inactive part is reclaimed first
        write(root.resolve("sys/fs/cgroup/memory/docker/abc/memory.stat"),
                "cache 805306368\nrss 268435456\ntotal_cache 805306368\ntotal_inactive_file " + (768 * MIB) + "\n");
        assertEquals(GIB - 768 * MIB, ProcessMemory.read(root).usage());
        assertEquals(2 * GIB - 256 * MIB, ProcessMemory.read(root).available());
    }

    @Test
    void cgroupV2InactivePageCacheIsNotCountedAsUsed(@TempDir Path root) throws IOException {
        meminfo(root);
        write(root.resolve("proc/self/cgroup"), "0::/binder\n");
        write(root.resolve("sys/fs/cgroup/binder/memory.max"), (2 * GIB) + "\n");
        write(root.resolve("sys/fs/cgroup/binder/memory.current"), (1900 * MIB) + "\n");     // a 1.5 GiB file just read
        write(root.resolve("sys/fs/cgroup/binder/memory.stat"),
                "anon 419430400\nfile 1572864000\nactive_file 104857600\ninactive_file " + (1400 * MIB) + "\n");
        ProcessMemory memory = ProcessMemory.read(root);
        assertEquals(500 * MIB, memory.usage());
        assertEquals(2 * GIB - 500 * MIB, memory.available(), "the cached file does not count against what fits");
    }

    @Test
    void cgroupV1HugeLimitMeansUnlimited(@TempDir Path root) throws IOException {
        meminfo(root);
        write(root.resolve("proc/self/cgroup"), "9:memory:/user.slice\n");
        write(root.resolve("sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes"), "9223372036854771712\n");
        write(root.resolve("sys/fs/cgroup/memory/user.slice/memory.usage_in_bytes"), (GIB) + "\n");
        write(root.resolve("sys/fs/cgroup/memory/memory.limit_in_bytes"), "9223372036854771712\n");
        ProcessMemory memory = ProcessMemory.read(root);
        assertFalse(memory.containerLimited());
        assertEquals(48 * GIB, memory.available());
    }

    @Test
    void limitAboveTheRamIsNoLimit(@TempDir Path root) throws IOException {
        meminfo(root);
        write(root.resolve("proc/self/cgroup"), "0::/big\n");
        write(root.resolve("sys/fs/cgroup/big/memory.max"), (128 * GIB) + "\n");
        write(root.resolve("sys/fs/cgroup/big/memory.current"), (GIB) + "\n");
        assertFalse(ProcessMemory.read(root).containerLimited());
        assertEquals(48 * GIB, ProcessMemory.read(root).available());
    }

    @Test
    void noCgroupFilesMeansPhysicalMemory(@TempDir Path root) throws IOException {
        meminfo(root);
        ProcessMemory memory = ProcessMemory.read(root);
        assertEquals(new ProcessMemory(64 * GIB, 48 * GIB, -1, -1), memory);
        assertEquals(48 * GIB, memory.available());
    }

    @Test
    void limitLeavesLessThanTheHostHasAvailable(@TempDir Path root) throws IOException {
        // a host under pressure: its MemAvailable (1 GiB) is below what the container's limit leaves (1.5 GiB)
        write(root.resolve("proc/meminfo"), "MemTotal: 4194304 kB\nMemAvailable: 1048576 kB\n");
        write(root.resolve("proc/self/cgroup"), "0::/\n");
        write(root.resolve("sys/fs/cgroup/memory.max"), (2 * GIB) + "\n");
        write(root.resolve("sys/fs/cgroup/memory.current"), (512 * MIB) + "\n");
        assertEquals(GIB, ProcessMemory.read(root).available());
    }

    @Test
    void thisMachineAgreesWithMeminfo() throws IOException {
        // on the machine running the tests: the available memory is at most MemAvailable, and positive
        ProcessMemory memory = ProcessMemory.current();
        long meminfo = -1;
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            if (line.startsWith("MemAvailable:")) {
                meminfo = Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        assertTrue(memory.available() > 0, memory.toString());
        // MemAvailable moves between the two reads: allow 256 MiB of drift
        assertTrue(memory.available() <= meminfo + 256 * MIB, memory + " vs MemAvailable " + meminfo);
        assertEquals(memory.available(), Advice.Machine.of(memory).availableRam());
    }
}
