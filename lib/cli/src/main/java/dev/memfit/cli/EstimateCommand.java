package dev.memfit.cli;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.io.Formats;
import dev.memfit.memory.Advice;
import dev.memfit.memory.LoadingStrategy;
import dev.memfit.memory.MemoryEstimate;
import dev.memfit.memory.MemoryEstimator;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code memfit estimate FILE --model-params N --batch B}: the memory a run will need, and advice. */
@Command(name = "estimate", mixinStandardHelpOptions = true,
        description = "Estimate heap, native, mapped, device and page-cache memory of training on a file, and advise how to load it.")
final class EstimateCommand implements Callable<Integer> {

    @Parameters(paramLabel = "FILE", description = "a .npy, an .h5ad atlas, or particles (.mrcs, .txt, .star, .cs), local or in a bucket (s3://bucket/key, gs://...; a shard folder s3://bucket/shards/)")
    private Path file;

    @Option(names = "--model-params", defaultValue = "0", description = "trainable parameters of the model")
    private long parameters;

    @Option(names = "--activations", defaultValue = "0", description = "activation values kept per sample for backward")
    private long activations;

    @Option(names = "--batch", defaultValue = "32")
    private int batch;

    @Option(names = "--optimizer", defaultValue = "adam", description = "sgd, sgd_momentum or adam (default ${DEFAULT-VALUE})")
    private String optimizer;

    @Option(names = "--devices", defaultValue = "1")
    private int devices;

    @Option(names = "--precision", defaultValue = "4", description = "bytes per parameter: 2, 4 or 8")
    private int precision;

    @Option(names = "--loading", description = "memory, mapped, lazy or streamed (default: as advised)")
    private String loading;

    @Option(names = "--device-memory-gb", defaultValue = "-1", description = "memory of one training device, GB (default: CPU)")
    private double deviceMemoryGb;

    @Option(names = "--storage-mb-per-s", defaultValue = "-1", description = "measured read speed of the data's storage")
    private double storageMegabytesPerSecond;

    @Override
    public Integer call() {
        // an object in a bucket is described through the cache of the environment (an .h5ad is staged whole, a zarr
        // store read chunk by chunk)
        Formats.DataFile data = dev.memfit.io.cloud.ObjectUri.isObject(file.toString())
                ? dev.memfit.data.Datasets.describe(file.toString()) : Formats.open(file);
        long samples = data.samples();
        if (samples == 0) {
            throw new InvalidFileException(file, -1, "at least one sample to estimate for", "none (" + data.format()
                    .description() + " with 0 samples)");
        }
        // Rows of a mapped .npy reach the loader as stored; images and cells are read as float32 (CSR densified).
        long sampleBytes = data.format() == Formats.Format.NPY ? data.sampleBytes()
                : data.sampleBytes() / data.dtype().byteSize() * Float.BYTES;
        String atlas = null;
        if (data.format() == Formats.Format.H5AD || data.format() == Formats.Format.ANNDATA_ZARR) {
            // a dense X has no nnz in its header facts: every value counts as stored (an upper bound for the CSR size)
            long stored = data.facts().get("nnz") instanceof Long nnz ? nnz : data.samples() * data.sampleShape()[0];
            atlas = Advice.atlasText(data.samples(), data.sampleShape()[0], stored, devices,
                    Advice.Machine.current());
        }
        MemoryEstimator.Optimizer kind;
        try {
            kind = MemoryEstimator.Optimizer.valueOf(optimizer.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new MemfitException("--optimizer: expected sgd, sgd_momentum or adam, found '" + optimizer + "'");
        }
        Advice.Machine here = Advice.Machine.current();
        Advice.Machine machine = new Advice.Machine(here.availableRam(), here.heapLimit(),
                deviceMemoryGb > 0 ? (long) (deviceMemoryGb * (1L << 30)) : -1,
                storageMegabytesPerSecond > 0 ? (long) (storageMegabytesPerSecond * 1e6) : -1, here.containerLimit());
        LoadingStrategy how = loading == null ? null : switch (loading.toLowerCase(Locale.ROOT)) {
            case "memory", "in_memory", "eager" -> LoadingStrategy.inMemory();
            case "mapped" -> LoadingStrategy.mapped();
            case "lazy" -> LoadingStrategy.lazy(Advice.LAZY_THREADS);
            case "streamed", "streaming" -> LoadingStrategy.streaming();
            default -> throw new MemfitException("--loading: expected memory, mapped, lazy or streamed, found '" + loading + "'");
        };
        MemoryEstimator.Builder builder = MemoryEstimator.builder().setModel(parameters, activations).optOptimizer(kind)
                .optBatchSize(batch).optDevices(devices).optPrecision(precision);
        long dataBytes = samples * sampleBytes;
        Advice advice = Advice.of(builder.setData(samples, sampleBytes, LoadingStrategy.mapped()).build().estimate(),
                dataBytes, machine);
        if (how == null) {
            how = advice.strategy();
        }
        MemoryEstimate estimate = builder.setData(samples, sampleBytes, how).build().estimate();
        String shown = dev.memfit.io.cloud.ObjectUri.isObject(file.toString())
                ? dev.memfit.io.cloud.ObjectUri.of(file).toString() : file.toString();
        System.out.printf(Locale.ROOT, "%s: %,d samples of %,d bytes (%.1f MiB), loaded %s%n%n", shown, samples, sampleBytes,
                dataBytes / (double) (1L << 20), how.describe());
        System.out.print(estimate);
        System.out.println();
        System.out.println(Advice.of(estimate, dataBytes, machine).text());
        if (atlas != null) {
            System.out.println();
            System.out.println("Single-cell atlas: " + atlas);
        }
        return 0;
    }
}
