package dev.memfit.cli;

import dev.memfit.source.SampleFiles;
import dev.memfit.bench.LazyBenchmark;
import dev.memfit.bench.SlowStorage;
import dev.memfit.source.ArraySource;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.source.Particles;
import dev.memfit.io.npy.FileSet;
import dev.memfit.io.hdf5.Pack;
import dev.memfit.io.hdf5.PackedFile;
import dev.memfit.io.storage.PageCache;
import dev.memfit.io.mrc.ParticleStack;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.io.storage.Storage;
import dev.memfit.memory.MemoryProbe;
import dev.memfit.memory.MemoryTimeline;
import dev.memfit.synthetic.SyntheticParticles;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;

/** {@code memfit bench lazy}: the figures of the lazy-loading issue, measured side by side in one run. */
@Command(name = "lazy", mixinStandardHelpOptions = true,
        description = "Lazy particle loading: threads on slow storage, lazy vs sequential reads, eager vs lazy heap, packed vs small files.")
final class BenchLazy implements Callable<Integer> {

    @Option(names = "--particles", defaultValue = "20000")
    private long particles;
    @Option(names = "--size", defaultValue = "64", description = "image side in pixels (default ${DEFAULT-VALUE})")
    private int size;
    @Option(names = "--latency-ms", defaultValue = "5")
    private int latencyMs;
    @Option(names = "--batches", defaultValue = "20", description = "random batches of 64 per slow-storage reading")
    private int batches;
    @Option(names = "--small-files", defaultValue = "20000", description = "files for the packed vs small files reading")
    private int smallFiles;

    @Override
    public Integer call() throws Exception {
        Path work = Path.of("build", "bench", "particles-" + particles + "x" + size);
        Path star = work.resolve("particles.star");
        if (!Files.exists(star)) {
            SyntheticParticles.builder().setParticles(particles).setSize(size).optPerStack(1000).optNoise(0.5).optMaxAngle(30)
                    .optSeed(42).write(work);
        }
        ParticleStack stack = ParticleStack.open(star);
        System.out.printf("%,d particles of %dx%d float32 (%.0f MB) in %d stacks%n%n", stack.size(), size, size,
                stack.fileBytes() / 1e6, stack.files().size());

        System.out.printf("Slow storage, %d ms per request (simulated), random batches of 64:%n", latencyMs);
        double one = 0;
        for (int threads : new int[]{1, 2, 4, 8, 16}) {
            var reading = LazyBenchmark.randomBatches(stack,
                    () -> SlowStorage.over(Storage.local(), Duration.ofMillis(latencyMs), 0), threads, 64, batches, 7);
            one = threads == 1 ? reading.samplesPerSecond() : one;
            System.out.printf("  %2d threads  %8.0f images/s  %5.1fx one thread%n", threads, reading.samplesPerSecond(),
                    reading.samplesPerSecond() / one);
        }

        System.out.println();
        System.out.println("Local, page-cached .mrcs: lazy random batches (second pass over the same source) vs reading");
        System.out.println("the same files sequentially (best of three):");
        var sequential = LazyBenchmark.sequential(stack.files(), stack.size());
        for (int i = 0; i < 2; i++) {
            var again = LazyBenchmark.sequential(stack.files(), stack.size());
            sequential = again.seconds() < sequential.seconds() ? again : sequential;
        }
        for (boolean mapped : new boolean[]{false, true}) {
            for (int threads : new int[]{1, 2}) {
                var lazy = LazyBenchmark.randomBatches(stack, mapped ? Storage::mapped : Storage::local, threads, 64,
                        Integer.MAX_VALUE, 7, 2);
                System.out.printf("  lazy, %-6s %d thread(s)  %8.0f images/s  %.2f GB/s  = %.2f of sequential (%.2f GB/s)%n",
                        mapped ? "mmap," : "pread,", threads, lazy.samplesPerSecond(), lazy.gigabytesPerSecond(),
                        lazy.gigabytesPerSecond() / sequential.gigabytesPerSecond(), sequential.gigabytesPerSecond());
            }
        }

        System.out.println();
        System.out.println("Peak heap and native memory, eager load vs one lazy epoch:");
        MemoryTimeline eager;
        try (MemoryProbe probe = MemoryProbe.start("eager", Duration.ofMillis(10));
             ArraySource images = Particles.builder().setRecords(stack).optThreads(4).eager()) {
            eager = probe.stop();
        }
        MemoryTimeline lazy;
        try (MemoryProbe probe = MemoryProbe.start("lazy", Duration.ofMillis(10));
             Loader loader = Datasets.particles(star).lazy(4).optBatchSize(64).optShuffle(1).build()) {
            for (Batch batch : loader.epoch(0)) {
                batch.size();
            }
            lazy = probe.stop();
        }
        long heapBase = eager.samples().getFirst().heapUsed();
        System.out.printf("  data %.0f MB | eager: native %.0f MB, heap growth %.1f MB | lazy: native %.1f MB, heap growth %.1f MB%n",
                stack.size() * (double) size * size * 4 / 1e6,
                eager.peak(s -> s.nativeAllocated()) / 1e6, (eager.peakHeap() - heapBase) / 1e6,
                lazy.peak(s -> s.nativeAllocated()) / 1e6, (lazy.peakHeap() - lazy.samples().getFirst().heapUsed()) / 1e6);

        System.out.println();
        Path filesDir = work.resolve("small-files-" + smallFiles);
        FileSet files;
        if (Files.isDirectory(filesDir)) {
            files = FileSet.open(filesDir);
        } else {
            long[] first = new long[smallFiles];
            for (int i = 0; i < first.length; i++) {
                first[i] = i;
            }
            try (ArraySource images = Particles.builder().setRecords(stack).optThreads(4).eager()) {
                files = SampleFiles.write(new dev.memfit.source.SubsetSource(images, first, false), filesDir);
            }
        }
        Path h5 = work.resolve("small-files-" + smallFiles + ".h5");
        if (!Files.exists(h5)) {
            Pack.pack(filesDir, h5);
        }
        PackedFile packed = PackedFile.open(h5);
        System.out.printf("One cold epoch (page cache dropped), %d samples, shuffled, 8 reader threads:%n", smallFiles);
        double filesLocal = coldEpoch(files, Storage::local);
        double packedLocal = coldEpoch(packed, Storage::local);
        System.out.printf("  local disk:       small files %.2f s, packed %.2f s (%.1fx)%n", filesLocal, packedLocal, filesLocal / packedLocal);
        double filesSlow = coldEpoch(files, () -> SlowStorage.over(Storage.local(), Duration.ofMillis(2), 200_000_000));
        double packedSlow = coldEpoch(packed, () -> SlowStorage.over(Storage.local(), Duration.ofMillis(2), 200_000_000));
        System.out.printf("  simulated network (2 ms/request, +1 per open): small files %.2f s, packed %.2f s (%.1fx)%n",
                filesSlow, packedSlow, filesSlow / packedSlow);
        return 0;
    }

    private static double coldEpoch(RecordIndex index, java.util.function.Supplier<Storage> storage) {
        PageCache.evict(index.files());
        long start = System.nanoTime();
        try (Loader loader = Datasets.records(index).optStorage(storage).lazy(8).optBatchSize(64).optShuffle(3).build()) {
            for (Batch batch : loader.epoch(0)) {
                batch.size();
            }
        }
        return (System.nanoTime() - start) / 1e9;
    }
}
