package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.io.Formats;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.AnnDataFiles;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.hdf5.PackedFile;
import dev.memfit.io.npy.FileSet;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.npy.NpyWriter;
import dev.memfit.sample.Labels;
import dev.memfit.shard.ObjectShardStore;
import dev.memfit.shard.ShardStore;
import dev.memfit.source.ArraySource;
import dev.memfit.source.SampleSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The entry point to loading: pick a file or a source, then configure batches.
 *
 * <pre>{@code
 * Loader loader = Datasets.npy(path).mapped().optBatchSize(256).optShuffle(42).optPrefetch(2).build();
 * Loader fromRam = Datasets.of(source).optBatchSize(256).optShuffle(42).build();
 * Loader any = Datasets.open(path).optBatchSize(256).optShuffle(42).build();   // format recognised by Formats
 * var info = Datasets.describe(path);   // samples, sample shape, dtype, bytes: headers only
 * }</pre>
 */
public final class Datasets {

    private Datasets() {
    }

    /**
     * A numpy {@code .npy} file whose rows are the samples.
     *
     * @param file the file
     * @return the next step: mapped or in memory
     */
    public static NpyDataset npy(Path file) {
        return new NpyDataset(file);
    }

    /**
     * A numpy {@code .npy} file whose rows are the samples, named by a local path or an object address
     * ({@code s3://bucket/x.npy}, {@code gs://bucket/x.npy}), which is read through a verified local cache: in
     * blocks ({@link NpyDataset#lazy}) or staged whole and mapped ({@link NpyDataset#mapped}); {@link NpyDataset#optCache}.
     *
     * @param pathOrUri a local path or an object address
     * @return the next step: lazy, mapped (an object: staged whole in the cache first) or in memory
     */
    public static NpyDataset npy(String pathOrUri) {
        return ObjectUri.isObject(pathOrUri) ? new NpyDataset(ObjectUri.parse(pathOrUri)) : new NpyDataset(Path.of(pathOrUri));
    }

    /**
     * Particle images: one {@code .mrcs} stack, a {@code .txt} list of stacks, a RELION {@code .star} or a cryoSPARC
     * {@code .cs} file.
     *
     * @param path the stack or listing
     * @return the next step: eager or lazy
     */
    public static ParticleDataset particles(Path path) {
        return new ParticleDataset(path);
    }

    /**
     * Particle images named by a local path or an object address: a {@code .mrcs} stack, a {@code .txt} list of stacks,
     * a RELION {@code .star} or a cryoSPARC {@code .cs} in a bucket ({@code s3://bucket/particles.star}) whose stacks
     * are in the same bucket,
     * read through a verified local cache ({@link ParticleDataset#optCache}).
     *
     * @param pathOrUri a local path or an object address
     * @return the next step: eager or lazy
     */
    public static ParticleDataset particles(String pathOrUri) {
        return ObjectUri.isObject(pathOrUri) ? new ParticleDataset(ObjectUri.parse(pathOrUri))
                : new ParticleDataset(Path.of(pathOrUri));
    }

    /**
     * Records described by an index, such as a packed HDF5 file ({@link dev.memfit.io.hdf5.PackedFile}) or a folder of
     * one-sample files ({@link dev.memfit.io.npy.FileSet}).
     *
     * @param index where each sample's bytes are
     * @return the next step: storage, then eager or lazy
     */
    public static RecordDataset records(dev.memfit.io.storage.RecordIndex index) {
        return new RecordDataset(() -> index);
    }

    /**
     * Any source. The loader does not close it: the caller keeps ownership.
     *
     * @param source the samples
     * @return the loader settings
     */
    public static LoaderBuilder of(SampleSource source) {
        return new LoaderBuilder(() -> source, false);
    }

    /**
     * A source made when the loader is built and closed with the loader, such as data read into memory on the spot.
     *
     * @param opener makes the source; called once, by {@link LoaderBuilder#build()}
     * @return the loader settings
     */
    public static LoaderBuilder owned(Supplier<? extends SampleSource> opener) {
        return new LoaderBuilder(opener::get, true);
    }

    /**
     * The one door: any path in a format memfit reads, recognised by {@link Formats#detect}, as a loader whose access
     * ({@link LoaderBuilder#optAccess}), order, batches and threads are set on the one builder. Without
     * {@code optAccess} each format is read the way that suits it: a {@code .npy} memory-mapped, particle stacks and
     * listings lazily on 4 threads, a packed HDF5 file or a folder of {@code .npy} samples lazily, a shard folder
     * through its {@link ShardStore}, the cells of an {@code .h5ad} or an AnnData {@code .zarr} store where they lie
     * (stream a large one with {@link LoaderBuilder#optBlockShuffle}). Formats with settings of their own keep their
     * entry ({@link #particles} for a data folder, {@link #records} for an index of your own).
     *
     * <pre>{@code
     * try (Loader loader = Datasets.open(path).optAccess(Access.inMemory()).optBatchSize(256).optShuffle(42).build()) { ... }
     * }</pre>
     *
     * @param path a file or folder
     * @return the loader settings
     * @throws MemfitException for formats memfit does not read
     */
    public static LoaderBuilder open(Path path) {
        Formats.Format format = Formats.detect(path);
        boolean annData = format == Formats.Format.H5AD || format == Formats.Format.ANNDATA_ZARR;
        return new LoaderBuilder(settings -> openLocal(path, format, settings), true, annData, false, true);
    }

    /**
     * The one door, for a local path or an object address ({@code s3://bucket/x.npy}, {@code gs://...}): a local path
     * as {@link #open(Path)}; an object by its name, read through a verified local cache
     * ({@link LoaderBuilder#optCache}): a {@code .npy} lazily in blocks ({@code Access.staged()} or {@code mapped()}:
     * staged whole, then mapped; {@code inMemory()}), particle stacks and listings ({@code .mrcs}, {@code .star},
     * {@code .cs}, {@code .txt}) lazily, an {@code .h5ad} staged whole, a {@code .zarr} store chunk by chunk, and any
     * other address as a shard folder, shard by shard.
     *
     * @param pathOrUri a local path or an object address
     * @return the loader settings
     */
    public static LoaderBuilder open(String pathOrUri) {
        if (!ObjectUri.isObject(pathOrUri)) {
            return open(Path.of(pathOrUri));
        }
        ObjectUri object = ObjectUri.parse(pathOrUri);
        String name = object.key().toLowerCase(java.util.Locale.ROOT);
        if (name.endsWith(".h5ad") || AnnDataFiles.isZarrName(object.key())) {
            return annData(object);
        }
        boolean npy = name.endsWith(".npy");
        boolean particles = name.endsWith(".mrcs") || name.endsWith(".mrc") || name.endsWith(".star")
                || name.endsWith(".cs") || name.endsWith(".txt");
        if (!npy && !particles) {
            // a shard folder, read shard by shard through the cache (kept open by its caller when given)
            return new LoaderBuilder(settings -> {
                checkAccess(settings.access(), pathOrUri + " (a shard folder in a bucket, read shard by shard)");
                return objectShards(object, settings.cache());
            }, true, false, true, true);
        }
        return new LoaderBuilder(settings -> {
            Access access = settings.access();
            boolean inMemory = access instanceof Access.InMemory;
            int threads = access instanceof Access.Lazy lazy ? lazy.threads() : 4;
            if (npy) {
                NpyDataset rows = new NpyDataset(object);
                if (settings.cache() != null) {
                    rows.optCache(settings.cache());
                }
                boolean whole = access instanceof Access.Staged || access instanceof Access.Mapped;
                return (inMemory ? rows.inMemory() : whole ? rows.mapped() : rows.lazy(threads)).openSource();
            }
            if (access instanceof Access.Staged || access instanceof Access.Mapped) {
                throw new MemfitException(pathOrUri + ": particle stacks in a bucket are read in blocks through the "
                        + "cache (Access.lazy(n), the default) or into memory (Access.inMemory()), not " + access);
            }
            ParticleDataset stacks = new ParticleDataset(object);
            if (settings.cache() != null) {
                stacks.optCache(settings.cache());
            }
            return (inMemory ? stacks.eager() : stacks.lazy(threads)).openSource();
        }, true, false, true, true);
    }

    /** A local path opened the way its access says (or its format's default). */
    private static SampleSource openLocal(Path path, Formats.Format format, LoaderBuilder.FormatSettings settings) {
        Access access = settings.access();
        if (access instanceof Access.Staged) {
            throw new MemfitException(path + ": Access.staged() is for an object in a bucket (s3://, gs://); a local file "
                    + "is read where it is");
        }
        boolean inMemory = access instanceof Access.InMemory;
        int threads = access instanceof Access.Lazy lazy ? lazy.threads() : 4;
        return switch (format) {
            case NPY -> inMemory ? dev.memfit.source.NpySource.inMemory(path) : dev.memfit.source.NpySource.mapped(path);
            case MRC, STACK_LIST, STAR, CRYOSPARC -> records(particles(path), inMemory, threads);
            case PACKED_HDF5 -> records(new RecordDataset(() -> PackedFile.open(path)), inMemory, threads);
            case NPY_FOLDER -> records(new RecordDataset(() -> FileSet.open(path)), inMemory, threads);
            case SHARDS -> {
                if (!inMemory) {
                    yield ShardStore.open(path);
                }
                try (ShardStore store = ShardStore.open(path)) {
                    yield ArraySource.copyOf(store.describe(), store, steps -> { });
                }
            }
            case H5AD, ANNDATA_ZARR -> {
                dev.memfit.source.AnnDataSource cells = annDataSource(path, settings);
                if (!inMemory) {
                    yield cells;
                }
                try (cells) {
                    yield inMemory(cells, path.getFileName().toString());
                }
            }
        };
    }

    private static SampleSource records(RecordDataset records, boolean inMemory, int threads) {
        return (inMemory ? records.eager() : records.lazy(threads)).openSource();
    }

    private static void checkAccess(Access access, String what) {
        if (access != null) {
            throw new MemfitException(what + " is read one way; optAccess(" + access + ") does not apply");
        }
    }

    /**
     * Every cell of AnnData as dense rows in native memory, in X's float type; refused when they would take more than
     * this machine's memory.
     */
    private static ArraySource inMemory(dev.memfit.source.AnnDataSource cells, String name) {
        long bytes = cells.totalBytes();
        long machine = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getTotalMemorySize();
        if (machine > 0 && bytes > machine) {
            throw new MemfitException(cells.describe() + ": X as dense rows needs " + bytes + " bytes, more than the "
                    + machine + " bytes of memory of this machine; read it where it lies (Access.mapped(), the default) "
                    + "or convert it with ./memfit shard");
        }
        ArraySource rows = ArraySource.allocate(name, cells.size(), cells.sampleShape(), cells.dtype());
        try {
            long rowBytes = cells.sampleBytes();
            int block = (int) Math.max(1, Math.min(cells.size(), (64L << 20) / Math.max(1, rowBytes)));
            for (long first = 0; first < cells.size(); first += block) {
                int count = (int) Math.min(block, cells.size() - first);
                cells.reader().readRows(first, count, rows.data().asSlice(first * rowBytes, count * rowBytes), cells.dtype());
            }
            return rows;
        } catch (RuntimeException e) {
            rows.close();
            throw e;
        }
    }

    /**
     * A folder of shards written by {@code ./memfit shard}: memory-mapped random access across the shards, checked
     * against their metadata when the loader is built. The loader closes the store.
     *
     * @param folder the shard folder
     * @return the loader settings
     */
    public static LoaderBuilder shards(Path folder) {
        return new LoaderBuilder(() -> ShardStore.open(folder), true);
    }

    /**
     * A shard folder named by a local path or an object address ({@code s3://bucket/shards/}). A folder in a bucket is
     * read shard by shard through {@link ObjectCache#fromEnvironment()} (closed with the loader), as
     * {@link #shards(String, ObjectCache)} describes.
     *
     * @param pathOrUri the folder or its address
     * @return the loader settings
     */
    public static LoaderBuilder shards(String pathOrUri) {
        if (!ObjectUri.isObject(pathOrUri)) {
            return shards(Path.of(pathOrUri));
        }
        ObjectUri folder = ObjectUri.parse(pathOrUri);
        return new LoaderBuilder(() -> objectShards(folder, null), true);
    }

    /** A shard folder in a bucket through the caller's cache (left open), or through one made for it (closed with it). */
    private static ObjectShardStore objectShards(ObjectUri folder, ObjectCache cache) {
        return cache != null ? ObjectShardStore.builder().setFolder(folder).setCache(cache).build()
                : ObjectShardStore.builder().setFolder(folder).setCache(ObjectCache.fromEnvironment()).optCloseCache(true).build();
    }

    /**
     * A shard folder in a bucket ({@code s3://bucket/shards/}, as {@code ./memfit shard} writes it), read shard by
     * shard through a cache that may be smaller than the data ({@link ObjectShardStore}): the metadata is staged and
     * checked when the loader is built, each shard staged whole and checked against its CRC32C when first needed,
     * and the next two shards of the epoch's order staged in the background while one is read. With
     * {@link LoaderBuilder#optShuffle} the order is shard by shard (shards shuffled, cells shuffled within each
     * shard), so that each shard is downloaded at most once per epoch. The loader leaves the cache open.
     *
     * @param uri the folder's address
     * @param cache the cache, kept open by the caller (to share it or read its statistics)
     * @return the loader settings
     */
    public static LoaderBuilder shards(String uri, ObjectCache cache) {
        return shards(ObjectShardStore.builder().setFolder(ObjectUri.parse(uri)).setCache(cache));
    }

    /**
     * A shard folder in a bucket with the store's own settings, such as the shards staged ahead
     * ({@link ObjectShardStore.Builder#optPrefetchShards}); the loader builds and closes the store.
     *
     * @param settings the store's settings
     * @return the loader settings
     */
    public static LoaderBuilder shards(ObjectShardStore.Builder settings) {
        return new LoaderBuilder(settings::build, true);
    }

    /**
     * The cells of AnnData named by a local path or an object address: an {@code .h5ad} ({@code s3://bucket/atlas.h5ad},
     * staged whole into a verified local cache when the loader is built) or a zarr store
     * ({@code s3://bucket/atlas.zarr} or {@code .zarr.zip}, read chunk by chunk through the cache); see
     * {@link #h5ad(Path)} and {@link LoaderBuilder#optCache}. The name is the format's that came first: both are read.
     *
     * @param pathOrUri the file, store or its address
     * @return the loader settings
     */
    public static LoaderBuilder h5ad(String pathOrUri) {
        return ObjectUri.isObject(pathOrUri) ? annData(ObjectUri.parse(pathOrUri)) : annData(Path.of(pathOrUri));
    }

    /**
     * The cells of AnnData as samples, read where they lie: an {@code .h5ad}, or a zarr store as anndata's
     * {@code write_zarr} writes it (a {@code .zarr} folder, or a {@code .zarr.zip}). Sample {@code i} is cell
     * {@code i}, dense, in X's float type; {@link LoaderBuilder#optLayer} picks {@code raw/X} or a layer. Stream a
     * file larger than memory in a block-shuffled order ({@link LoaderBuilder#optBlockShuffle}, scDataset's
     * block shuffling with a fetch factor): batches are drawn from a window of a few blocks of consecutive cells,
     * so the file is read in long stretches, a compressed file's chunks are decoded once per window, and memory is
     * the batch buffers and the window's decoded chunks whatever the size of the file. {@link LoaderBuilder#optShuffle}
     * shuffles every cell (random reads: fast from a page-cached uncompressed file, slow from a compressed one).
     *
     * <pre>{@code
     * try (Loader cells = Datasets.h5ad(file).optBlockShuffle(1000, 16, 42).optBatchSize(256).build()) { ... }
     * }</pre>
     *
     * @param file the {@code .h5ad}, {@code .zarr} folder or {@code .zarr.zip}
     * @return the loader settings
     */
    public static LoaderBuilder h5ad(Path file) {
        return annData(file);
    }

    private static LoaderBuilder annData(Path file) {
        Formats.Format format = AnnDataFiles.isZarr(file) ? Formats.Format.ANNDATA_ZARR : Formats.Format.H5AD;
        return new LoaderBuilder(settings -> openLocal(file, format, settings), true, true, false, true);
    }

    private static dev.memfit.source.AnnDataSource annDataSource(Path file, LoaderBuilder.FormatSettings settings) {
        return new dev.memfit.source.AnnDataSource(AnnDataFiles.builder().setFile(file).optLayer(settings.layer())
                .optChunkCacheBytes(settings.chunkCacheBytes()).open(), cellsOf(file.toString(), settings.layer()));
    }

    /** What an AnnData loader reads, for descriptions: the file, and the matrix unless it is X. */
    private static String cellsOf(String where, String layer) {
        return "X".equals(layer) ? where : where + " " + dev.memfit.io.anndata.AnnData.matrixPath(layer);
    }

    private static LoaderBuilder annData(ObjectUri object) {
        return new LoaderBuilder(settings -> {
            if (settings.access() instanceof Access.InMemory || settings.access() instanceof Access.Lazy) {
                throw new MemfitException(object + ": AnnData in a bucket is read staged (an .h5ad) or chunk by chunk (a "
                        + ".zarr store); optAccess(" + settings.access() + ") does not apply");
            }
            ObjectCache cache = settings.cache();
            if (dev.memfit.io.AnnDataFiles.isZarrName(object.key())) {
                // a zarr store: its chunks read through the cache as batches need them; the cache kept open until the
                // loader closes (and closed with it when the loader made it)
                ObjectCache objects = cache != null ? cache : ObjectCache.fromEnvironment();
                try {
                    return new dev.memfit.source.AnnDataSource(dev.memfit.io.AnnDataFiles.builder()
                            .setFile(object.toPath()).optStorage(objects).optLayer(settings.layer()).optChunkCacheBytes(settings.chunkCacheBytes()).open(),
                            cellsOf(object.toString(), settings.layer()), cache != null ? () -> { } : objects);
                } catch (RuntimeException e) {
                    if (cache == null) {
                        objects.close();
                    }
                    throw e;
                }
            }
            // the whole object, verified, as a local file that the mapped reader reads unchanged; pinned (and the
            // cache kept open) until the loader closes
            StagedFile staged = StagedFile.of(object, cache);
            try {
                return new dev.memfit.source.AnnDataSource(dev.memfit.io.AnnDataFiles.builder().setFile(staged.file())
                        .optLayer(settings.layer()).optChunkCacheBytes(settings.chunkCacheBytes()).open(), cellsOf(object.toString(), settings.layer()), staged);
            } catch (RuntimeException e) {
                staged.close();
                throw ObjectCache.aboutObject(e, staged.file(), object);
            }
        }, true, true, true, true);
    }

    /**
     * What a path holds, from headers and metadata only (the data is not read): the samples, the shape of one sample,
     * the element type and the bytes on disk, in the same terms for every format {@link #open} reads and for an
     * {@code .h5ad}. The description {@link Formats#open} gives, and a shard folder's from its metadata.
     *
     * <pre>{@code
     * var info = Datasets.describe(file);
     * long rows = info.samples();
     * long rowBytes = info.sampleBytes();
     * Object storedValues = info.facts().get("nnz");   // format-specific facts, as ./memfit inspect prints them
     * }</pre>
     *
     * @param path a file or folder
     * @return the description
     * @throws MemfitException when the format is unknown or a header is invalid (naming the file and the position)
     */
    public static Formats.DataFile describe(Path path) {
        if (Formats.detect(path) != Formats.Format.SHARDS) {
            return Formats.open(path);
        }
        try (ShardStore store = ShardStore.open(path)) {
            long[] sizes = store.shardSizes();
            long[] sampleShape = store.sampleShape().getShape();
            Map<String, Object> facts = new LinkedHashMap<>();
            facts.put("format", Formats.Format.SHARDS.description() + ", " + sizes.length + " shard(s)");
            facts.put("cells", store.size());
            facts.put("genes", sampleShape[0]);
            facts.put("shard_sizes", sizes);
            facts.put("layout", store.layout() == dev.memfit.shard.ShardLayout.SPARSE ? "sparse (CSR)" : "dense");
            facts.put("dtype", dtypeFact(store.dtype(), store.castFrom()));
            facts.put("nnz", store.storedValues());
            // the bytes really stored: for CSR shards the non-zero values, their gene indices and row pointers
            facts.put("stored_bytes", store.storedBytes());
            long bytes = store.storedBytes();
            try {
                bytes += Files.size(path.resolve(Formats.SHARD_METADATA));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return new Formats.DataFile(path, Formats.Format.SHARDS, store.size(), sampleShape, store.dtype(), bytes, facts);
        }
    }

    /**
     * What a local path or an object holds, as {@link #describe(Path)} says; an object is read through
     * {@link ObjectCache#fromEnvironment()} ({@link #describe(ObjectUri, ObjectCache)}).
     *
     * @param pathOrUri a file, a folder or an object address
     * @return the description
     */
    public static Formats.DataFile describe(String pathOrUri) {
        if (!ObjectUri.isObject(pathOrUri)) {
            return describe(Path.of(pathOrUri));
        }
        try (ObjectCache cache = ObjectCache.fromEnvironment()) {
            return describe(ObjectUri.parse(pathOrUri), cache);
        }
    }

    /**
     * What an object holds, read through a cache: a {@code .npy} from its header, particle stacks and
     * listings from the listing and the stacks' headers, an {@code .h5ad} staged whole (its metadata is spread
     * through the file), an AnnData zarr store ({@code .zarr}, {@code .zarr/}, {@code .zarr.zip}) from its metadata,
     * chunk by chunk, and a shard folder (an address ending in {@code /}, or one without an extension) from its
     * metadata. The description names the object ({@code s3:/bucket/key}, the path form of {@link ObjectUri}).
     *
     * @param uri the object or shard folder
     * @param cache the cache, left open
     * @return the description
     */
    public static Formats.DataFile describe(ObjectUri uri, ObjectCache cache) {
        String name = uri.key().toLowerCase(java.util.Locale.ROOT);
        String last = name.substring(name.lastIndexOf('/') + 1);
        if (AnnDataFiles.isZarrName(name)) {
            return Formats.openAnnData(cache, zarrPath(uri), "X");
        }
        if (name.endsWith(".npy")) {
            return Formats.openNpy(cache, uri.toPath());
        }
        if (name.endsWith(".h5ad")) {
            try (StagedFile staged = StagedFile.of(uri, cache)) {
                try {
                    return Formats.openH5ad(staged.file(), uri.toPath());
                } catch (RuntimeException e) {
                    throw ObjectCache.aboutObject(e, staged.file(), uri);
                }
            }
        }
        if (name.endsWith(".mrcs") || name.endsWith(".mrc") || name.endsWith(".star") || name.endsWith(".txt")
                || name.endsWith(".cs")) {
            return describeParticles(uri, cache);
        }
        if (name.isEmpty() || name.endsWith("/") || !last.contains(".")) {
            try (ObjectShardStore store = ObjectShardStore.builder().setFolder(uri).setCache(cache)
                    .optPrefetchShards(0).build()) {
                long[] sizes = store.shardSizes();
                Map<String, Object> facts = new LinkedHashMap<>();
                facts.put("format", Formats.Format.SHARDS.description() + ", " + sizes.length + " shard(s)");
                facts.put("cells", store.size());
                facts.put("genes", store.sampleShape().get(0));
                facts.put("shard_sizes", sizes);
                facts.put("layout", store.layout() == dev.memfit.shard.ShardLayout.SPARSE ? "sparse (CSR)" : "dense");
                facts.put("dtype", dtypeFact(store.dtype(), store.castFrom()));
                facts.put("nnz", store.storedValues());
                facts.put("stored_bytes", store.storedBytes());
                long bytes = store.storedBytes() + cache.size(uri.resolve(Formats.SHARD_METADATA).toPath());
                return new Formats.DataFile(uri.toPath(), Formats.Format.SHARDS, store.size(),
                        store.sampleShape().getShape(), store.dtype(), bytes, facts);
            }
        }
        throw new MemfitException(uri + ": expected an object memfit reads from a bucket (.npy, .h5ad, an AnnData .zarr "
                + "store or .zarr.zip, .mrcs/.mrc, .star, a cryoSPARC .cs, a .txt list of stacks, or a shard folder ending in /)");
    }

    /** The path form of a zarr store's address, without a trailing slash ({@code s3:/bucket/atlas.zarr}). */
    static Path zarrPath(ObjectUri uri) {
        return uri.toPath();
    }

    /** A shard folder's value type as inspect shows it: {@code float64}, or {@code float32 (cast from float64)}. */
    private static String dtypeFact(dev.memfit.DType dtype, dev.memfit.DType castFrom) {
        String name = dtype.name().toLowerCase(java.util.Locale.ROOT);
        return castFrom == null ? name : name + " (cast from " + castFrom.name().toLowerCase(java.util.Locale.ROOT) + ")";
    }

    private static Formats.DataFile describeParticles(ObjectUri uri, ObjectCache cache) {
        dev.memfit.io.mrc.ParticleStack stack = dev.memfit.io.mrc.ParticleStack.open(uri.toPath(), null, cache);
        dev.memfit.io.mrc.MrcHeader header = stack.header(0);
        String name = uri.key().toLowerCase(java.util.Locale.ROOT);
        boolean single = name.endsWith(".mrcs") || name.endsWith(".mrc");
        Formats.Format format = single ? Formats.Format.MRC : name.endsWith(".star") ? Formats.Format.STAR
                : name.endsWith(".cs") ? Formats.Format.CRYOSPARC : Formats.Format.STACK_LIST;
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("format", single ? "MRC2014 mode " + dev.memfit.io.mrc.MrcHeader.mode(header.dtype())
                : format.description() + ", " + stack.files().size() + " stack(s)");
        facts.put("images", stack.size());
        facts.put("image_shape", new long[]{stack.height(), stack.width()});
        facts.put("dtype", header.dtype().name().toLowerCase(java.util.Locale.ROOT));
        facts.put("voxel_size", header.voxelSize());
        facts.put("image_bytes", stack.fileBytes());
        long bytes = 0;
        for (Path file : stack.files()) {
            bytes += cache.size(file);
        }
        return new Formats.DataFile(uri.toPath(), format, stack.size(), new long[]{stack.height(), stack.width()},
                header.dtype(), bytes, facts);
    }

    /**
     * One dataframe of an AnnData {@code .h5ad} (or {@code .zarr} store), as anndata stores it: {@code obs} (a row per cell, such as cell
     * types) or {@code var} (a row per gene, such as {@code highly_variable}). Reads the annotations only, not
     * {@code X}.
     *
     * @param h5ad the file
     * @param frame "obs" or "var"
     * @return column name to its values, in the stored column order (the index excluded): a {@code String[]} for
     *         strings and categoricals (a missing category is {@code null}), a {@code boolean[]} for booleans (which
     *         anndata stores as an HDF5 enum), a {@code double[]} for numbers: labels to read, not a copy to write
     *         elsewhere ({@link AnnData#frameColumns} keeps each column's type)
     * @throws MemfitException when the frame is neither "obs" nor "var", or the file is not a valid {@code .h5ad}
     */
    public static Map<String, Object> columns(Path h5ad, String frame) {
        if (!"obs".equals(frame) && !"var".equals(frame)) {
            throw new MemfitException(h5ad + ": an .h5ad has the dataframes \"obs\" (cells) and \"var\" (genes), not \""
                    + frame + "\"");
        }
        try (AnnData file = AnnDataFiles.open(h5ad)) {
            return file.columns(frame);
        }
    }

    /**
     * The labels of an {@code .h5ad}'s cells, from one {@code obs} column of strings, categories or booleans (classes
     * "False" and "True"), encoded as class
     * numbers ({@link Labels#of}): for a classifier's targets or a weighted sampler.
     *
     * @param h5ad the file
     * @param obsColumn the column, such as "cell_type"
     * @return the class of each cell and the class names, sorted
     * @throws MemfitException naming the columns that exist when this one does not, when it holds numbers, or when
     *         a cell has no label
     */
    public static Labels labels(Path h5ad, String obsColumn) {
        Object values;
        try (AnnData file = AnnDataFiles.open(h5ad)) {
            values = file.column("obs", obsColumn);
        }
        return labelsOf(values, h5ad.toString(), obsColumn);
    }

    private static Labels labelsOf(Object values, String source, String obsColumn) {
        return Labels.of(Labels.namesOf(values, source, obsColumn), obsColumn);
    }

    /**
     * One dataframe of an {@code .h5ad} named by a local path or an object address, as {@link #columns(Path, String)}
     * reads it; an object is staged whole through {@link ObjectCache#fromEnvironment()} first.
     *
     * @param pathOrUri the file or its address
     * @param frame "obs" or "var"
     * @return column name to its values
     */
    public static Map<String, Object> columns(String pathOrUri, String frame) {
        if (!ObjectUri.isObject(pathOrUri)) {
            return columns(Path.of(pathOrUri), frame);
        }
        if (AnnDataFiles.isZarrName(pathOrUri)) {
            if (!"obs".equals(frame) && !"var".equals(frame)) {
                throw new MemfitException(pathOrUri + ": AnnData has the dataframes \"obs\" (cells) and \"var\" (genes), "
                        + "not \"" + frame + "\"");
            }
            try (ObjectCache cache = ObjectCache.fromEnvironment();
                 AnnData file = AnnDataFiles.builder().setFile(zarrPath(ObjectUri.parse(pathOrUri))).optStorage(cache).open()) {
                return file.columns(frame);
            }
        }
        try (StagedFile staged = StagedFile.of(ObjectUri.parse(pathOrUri), null)) {
            try {
                return columns(staged.file(), frame);
            } catch (RuntimeException e) {
                throw ObjectCache.aboutObject(e, staged.file(), staged.uri());
            }
        }
    }

    /**
     * The labels of an {@code .h5ad}'s cells named by a local path or an object address, as
     * {@link #labels(Path, String)} reads them; an object is staged whole through {@link ObjectCache#fromEnvironment()}.
     *
     * @param pathOrUri the file or its address
     * @param obsColumn the column, such as "cell_type"
     * @return the class of each cell and the class names, sorted
     */
    public static Labels labels(String pathOrUri, String obsColumn) {
        if (!ObjectUri.isObject(pathOrUri)) {
            return labels(Path.of(pathOrUri), obsColumn);
        }
        if (AnnDataFiles.isZarrName(pathOrUri)) {
            Object values;
            try (ObjectCache cache = ObjectCache.fromEnvironment();
                 AnnData file = AnnDataFiles.builder().setFile(zarrPath(ObjectUri.parse(pathOrUri))).optStorage(cache).open()) {
                values = file.column("obs", obsColumn);
            }
            return labelsOf(values, pathOrUri, obsColumn);
        }
        try (StagedFile staged = StagedFile.of(ObjectUri.parse(pathOrUri), null)) {
            try {
                return labels(staged.file(), obsColumn);
            } catch (RuntimeException e) {
                throw ObjectCache.aboutObject(e, staged.file(), staged.uri());
            }
        }
    }

    /**
     * Writes a source as a numpy {@code .npy}, one row per sample in the source's element type, for
     * {@code np.load(path, mmap_mode="r")} or {@link #npy}. The file is written under a temporary name and moved into
     * place when complete, so an interrupted write never leaves a file that looks valid. A source other than an
     * in-memory array is read in batches of about 64 MB.
     *
     * @param file the final path
     * @param source the samples; left open
     * @return the path written
     */
    public static Path writeNpy(Path file, SampleSource source) {
        long[] sampleShape = source.sampleShape().getShape();
        long[] shape = new long[sampleShape.length + 1];
        shape[0] = source.size();
        System.arraycopy(sampleShape, 0, shape, 1, sampleShape.length);
        NpyHeader header = NpyHeader.of(source.dtype(), shape);
        if (source instanceof ArraySource array) {
            return Npy.write(file, header, array.data());
        }
        long sampleBytes = source.sampleBytes();
        int rowsPerBatch = (int) Math.max(1, Math.min(source.size(), (64L << 20) / Math.max(1, sampleBytes)));
        try (NpyWriter writer = Npy.create(file, header);
             Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(Math.max(1, rowsPerBatch * sampleBytes), 64);
            for (long first = 0; first < source.size(); first += rowsPerBatch) {
                int count = (int) Math.min(rowsPerBatch, source.size() - first);
                long[] indices = new long[count];
                for (int i = 0; i < count; i++) {
                    indices[i] = first + i;
                }
                MemorySegment rows = buffer.asSlice(0, count * sampleBytes);
                source.readBatch(indices, rows);
                writer.writeRows(first, rows);
            }
            return writer.commit();
        }
    }
}
