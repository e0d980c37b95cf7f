package dev.memfit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.memfit.CompensatedSum;
import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.data.Datasets;
import dev.memfit.io.Formats;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.shard.ObjectShardStore;
import dev.memfit.shard.ShardStore;
import dev.memfit.source.SampleSource;
import dev.memfit.io.AnnDataFiles;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.hdf5.PackedFile;
import dev.memfit.io.mrc.ParticleStack;
import dev.memfit.io.npy.FileSet;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.io.storage.Storage;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code memfit inspect FILE}: what a data file holds, and the sum of its values for comparison with numpy. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Show format, shape, dtype, byte order, memory order, size and the float64 sum of all values.")
final class InspectCommand implements Callable<Integer> {

    @Parameters(paramLabel = "FILE", description = "a .npy file, an .mrcs/.mrc stack, a .txt list of stacks, a RELION .star, a cryoSPARC .cs, an .h5ad, an AnnData .zarr folder or .zarr.zip, an object in a bucket (s3://bucket/x.npy, .h5ad, .zarr (read chunk by chunk), .zarr.zip, .mrcs, .star, .cs, a shard folder s3://bucket/shards/; gs://...), read through the cache of MEMFIT_CACHE_DIR, an .h5 written by pack or a folder of .npy samples")
    private Path file;

    @Option(names = "--json", description = "print one JSON object instead of a table")
    private boolean json;

    @Option(names = "--datadir", paramLabel = "DIR", description = "for a .star, .cs or .txt listing: the folder its "
            + "relative stack names start from (cryoDRGN's --datadir); by default they are looked for under the listing's "
            + "folder, then each folder above it (a RELION or cryoSPARC project's), then the working folder")
    private Path datadir;

    @Option(names = "--layer", defaultValue = "X", paramLabel = "MATRIX", description = "for AnnData (.h5ad, .zarr): the matrix read, "
            + "X (default), raw/X or a layer such as counts (layers/counts); the description lists the file's matrices")
    private String layer;

    @Override
    public Integer call() throws IOException {
        Map<String, Object> facts = inspect(file, datadir, layer);
        if (json) {
            System.out.println(new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS).writeValueAsString(facts));
        } else {
            facts.forEach((key, value) -> System.out.printf(Locale.ROOT, "%-14s %s%n", key.replace('_', ' '),
                    value instanceof long[] shape ? Arrays.toString(shape) : value));
        }
        return 0;
    }

    /**
     * The facts about a file, in display order: what {@link Formats#open} says, its size on disk, and the float64 sum
     * of its values (streamed, never loaded whole).
     *
     * @param file the file
     * @param datadir where a listing's relative stack names point, or null to search
     * @param layer the matrix of an {@code .h5ad} read: X, raw/X or a layer
     * @return name to value
     */
    static Map<String, Object> inspect(Path file, Path datadir, String layer) {
        if (ObjectUri.isObject(file.toString())) {
            if (datadir != null) {
                throw new MemfitException("--datadir is for local listings; in a bucket, relative stack names are looked "
                        + "for under the listing's prefix and each prefix above it");
            }
            return inspectObject(ObjectUri.of(file), layer);
        }
        if (datadir != null) {
            Formats.DataFile data = Formats.particles(file, datadir);
            Map<String, Object> facts = new LinkedHashMap<>();
            facts.put("file", file.toString());
            facts.putAll(data.facts());
            facts.put("size_on_disk", data.bytesOnDisk());
            facts.put("sum", sumLocal(ParticleStack.open(file, datadir)));
            return facts;
        }
        Formats.DataFile data = Datasets.describe(file);   // shard folders too
        if (!layer.equals("X")) {
            if (!isAnnData(data.format())) {
                throw new MemfitException("--layer is for AnnData (.h5ad, .zarr); " + file + " is " + data.format().description());
            }
            data = Formats.openAnnData(file, file, layer);
        }
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("file", file.toString());
        facts.putAll(data.facts());
        if (isAnnData(data.format())) {
            // one pass for both: for a dense X, nnz is the count of non-zero values, as numpy's count_nonzero
            try (AnnData h5ad = AnnDataFiles.builder().setFile(file).optLayer(layer).open()) {
                AnnData.Totals totals = h5ad.totals();
                if (!h5ad.sparse()) {
                    facts.put("nnz", totals.nonZeroValues());
                }
                facts.put("size_on_disk", data.bytesOnDisk());
                facts.put("sum", totals.sum());
                return facts;
            }
        }
        facts.put("size_on_disk", data.bytesOnDisk());
        facts.put("sum", sum(data));
        return facts;
    }

    /**
     * An object in a bucket, read through the cache of the environment ({@link ObjectCache#fromEnvironment()}): a
     * {@code .npy} from its header (one small request on a cold cache) and then every block; an {@code .h5ad} staged whole (verified) and read
     * like a local file; an AnnData zarr store chunk by chunk through the cache; a stack or listing from its headers, then its images block by block; a shard folder
     * ({@code s3://bucket/shards/}) from its metadata, then shard by shard, each checked against its CRC32C.
     */
    private static Map<String, Object> inspectObject(ObjectUri uri, String layer) {
        try (ObjectCache cache = ObjectCache.fromEnvironment()) {
            Path path = uri.toPath();
            Map<String, Object> facts = new LinkedHashMap<>();
            facts.put("file", uri.toString());
            String name = uri.key().toLowerCase(Locale.ROOT);
            if (name.endsWith(".npy")) {
                Formats.DataFile data = Formats.openNpy(cache, path);
                facts.putAll(data.facts());
                facts.put("size_on_disk", data.bytesOnDisk());
                facts.put("sum", sumElements(cache, path, Npy.readHeader(cache, path)));
                return facts;
            }
            Formats.DataFile data = Datasets.describe(uri, cache);
            if (!layer.equals("X")) {
                if (!isAnnData(data.format())) {
                    throw new MemfitException("--layer is for AnnData (.h5ad, .zarr); " + uri + " is " + data.format().description());
                }
                data = data.format() == Formats.Format.ANNDATA_ZARR ? Formats.openAnnData(cache, path, layer)
                        : Formats.openH5ad(cache.stage(uri).file(), uri.toPath(), layer);
            }
            facts.putAll(data.facts());
            facts.put("size_on_disk", data.bytesOnDisk());
            switch (data.format()) {
                case H5AD -> {
                    Path staged = cache.stage(uri).file();
                    try (AnnData h5ad = AnnDataFiles.builder().setFile(staged).optLayer(layer).open()) {
                        AnnData.Totals totals = h5ad.totals();
                        if (!h5ad.sparse()) {
                            facts.put("nnz", totals.nonZeroValues());
                        }
                        facts.put("sum", totals.sum());
                    } catch (RuntimeException e) {
                        throw ObjectCache.aboutObject(e, staged, uri);
                    }
                }
                case ANNDATA_ZARR -> {
                    // read chunk by chunk through the cache, never staged whole
                    try (AnnData zarr = AnnDataFiles.builder().setFile(path).optStorage(cache).optLayer(layer).open()) {
                        AnnData.Totals totals = zarr.totals();
                        if (!zarr.sparse()) {
                            facts.put("nnz", totals.nonZeroValues());
                        }
                        facts.put("sum", totals.sum());
                    }
                }
                case MRC, STACK_LIST, STAR, CRYOSPARC -> facts.put("sum", sum(ParticleStack.open(path, null, cache), cache));
                case SHARDS -> {
                    try (ObjectShardStore store = ObjectShardStore.builder().setFolder(uri).setCache(cache).build()) {
                        store.prefetchOrder(java.util.stream.IntStream.range(0, store.shardSizes().length).toArray());
                        facts.put("sum", sum(store));
                    }
                }
                default -> throw new MemfitException(uri + ": inspect does not read " + data.format() + " from a bucket");
            }
            return facts;
        }
    }

    private static boolean isAnnData(Formats.Format format) {
        return format == Formats.Format.H5AD || format == Formats.Format.ANNDATA_ZARR;
    }

    /** Every element of a {@code .npy} summed in float64 from its stored type, in reads of about 32 MB. */
    private static double sumElements(Storage storage, Path file, NpyHeader header) {
        DType dtype = header.dtype();
        long size = dtype.byteSize();
        long count = header.elementCount();
        CompensatedSum sum = new CompensatedSum();
        try (Arena arena = Arena.ofConfined()) {
            long chunk = Math.max(1, Math.min(count, (32L << 20) / size));
            MemorySegment buffer = arena.allocate(Math.max(1, chunk * size), 8);
            for (long first = 0; first < count; first += chunk) {
                long n = Math.min(chunk, count - first);
                storage.read(file, header.dataOffset() + first * size, buffer.asSlice(0, n * size));
                sum.add(buffer, 0, n, dtype, header.byteOrder());
            }
        }
        return sum.value();
    }

    private static double sum(Formats.DataFile data) {
        Path file = data.path();
        return switch (data.format()) {
            case NPY -> {
                try (NpyArray array = Npy.map(file)) {
                    yield array.sum();
                }
            }
            case H5AD, ANNDATA_ZARR -> {
                try (AnnData h5ad = AnnDataFiles.open(file)) {
                    yield h5ad.sum();
                }
            }
            case MRC, STACK_LIST, STAR, CRYOSPARC -> sumLocal(ParticleStack.open(file));
            case PACKED_HDF5 -> sumLocal(PackedFile.open(file));
            case NPY_FOLDER -> sumLocal(FileSet.open(file));
            case SHARDS -> {
                // the recorded checksums first: a damaged file must fail here, not give a sum (the folder in a bucket
                // is checked as it downloads); then every cell densified as a loader reads it
                ShardStore.checkFiles(file);
                try (ShardStore store = ShardStore.open(file)) {
                    yield sum(store);
                }
            }
        };
    }

    /**
     * Samples read in blocks of about 32 MB of consecutive samples in their type (float64 shards as float64, never
     * rounded to float32), summed in float64.
     */
    private static double sum(SampleSource source) {
        CompensatedSum sum = new CompensatedSum();
        try (Arena arena = Arena.ofConfined()) {
            int block = (int) Math.max(1, Math.min(source.size(), (32L << 20) / source.sampleBytes()));
            MemorySegment buffer = arena.allocate(block * source.sampleBytes());
            for (long first = 0; first < source.size(); first += block) {
                int n = (int) Math.min(block, source.size() - first);
                long[] indices = new long[n];
                for (int i = 0; i < n; i++) {
                    indices[i] = first + i;
                }
                source.readBatch(indices, buffer);
                sum.add(buffer, 0, n * source.sampleBytes() / source.dtype().byteSize(), source.dtype(), ByteOrder.nativeOrder());
            }
        }
        return sum.value();
    }

    /**
     * Records (images, packed or single-file samples): summed in float64 from their stored type (a float64 sample is
     * never rounded to float32 on the way, unlike what a loader delivers), reading runs of neighbouring records of
     * one file in about 32 MB at a time.
     */
    private static double sumLocal(RecordIndex records) {
        try (Storage storage = Storage.local()) {
            return sum(records, storage);
        }
    }

    /** As {@link #sumLocal}, the bytes from a storage (an object cache for a listing in a bucket), left open. */
    private static double sum(RecordIndex records, Storage storage) {
        long values = 1;
        for (long dimension : records.sampleShape()) {
            values = Math.multiplyExact(values, dimension);
        }
        CompensatedSum sum = new CompensatedSum();
        try (Arena arena = Arena.ofConfined()) {
            long largest = 0;
            for (int f = 0; f < records.files().size(); f++) {
                largest = Math.max(largest, records.dtype(f).byteSize());
            }
            long recordBytes = Math.multiplyExact(values, largest);
            int chunk = (int) Math.max(1, Math.min(records.size(), (32L << 20) / Math.max(1, recordBytes)));
            MemorySegment buffer = arena.allocate(Math.max(1, chunk * recordBytes), 8);
            for (long first = 0; first < records.size(); ) {
                int file = records.fileOf(first);
                DType dtype = records.dtype(file);
                ByteOrder order = records.byteOrder(file);
                long bytes = values * dtype.byteSize();
                long start = records.offsetOf(first);
                int n = 1;
                while (n < chunk && first + n < records.size() && records.fileOf(first + n) == file
                        && records.offsetOf(first + n) == start + n * bytes) {
                    n++;
                }
                storage.read(records.files().get(file), start, buffer.asSlice(0, n * bytes));
                sum.add(buffer, 0, n * values, dtype, order);
                first += n;
            }
        }
        return sum.value();
    }
}
