package dev.memfit.shard;

import ai.djl.ndarray.types.Shape;
import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.Threads;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.source.SampleSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A shard folder in a bucket ({@code s3://bucket/shards/}, as {@code ./memfit shard} writes it and a copy uploads
 * it), read shard by shard through an {@link ObjectCache} that may be smaller than the data.
 *
 * <p><b>Shard-aware staging.</b> A shard is staged whole ({@link ObjectCache#stage}: verified against its ETag, then
 * against the size and CRC32C its metadata records, as {@link ShardStore#validate} checks local shards) and mapped
 * when a read first needs it. Given the epoch's shard order ({@link #prefetchOrder}, which
 * {@code Datasets.shards("s3://...")} passes from its {@link dev.memfit.sample.ShardShuffleSampler}), a background
 * thread stages the next {@link Builder#optPrefetchShards} shards of that order, one after the other, while the
 * current one is read. The shards in use (the current one, the one before it, for batches that straddle the
 * boundary, and those prefetched) are pinned in the cache ({@link ObjectCache#pin}) so that staging more never evicts
 * them; all others are released, so the cache's least-recently-used eviction removes shards already read this epoch.
 * Each shard is thus downloaded once per epoch when the cache holds fewer shards than the folder, and never again
 * when it holds them all. Without an order (another sampler), shards are staged as reads ask for them and the least
 * recently used beyond the window are released: correct, but a random order over all cells stages shards over and
 * over.
 *
 * <p>The versions of the metadata and of every shard file are pinned when the store opens (one HEAD each): a file
 * replaced on the server afterwards fails with an {@link dev.memfit.io.cloud.ObjectChangedException} when it is
 * staged, never mixing two versions.
 *
 * <pre>{@code
 * try (ObjectCache cache = ObjectCache.fromEnvironment();
 *      ObjectShardStore store = ObjectShardStore.builder().setFolder(ObjectUri.parse("s3://atlas/shards/"))
 *              .setCache(cache).optPrefetchShards(2).build()) { ... }
 * }</pre>
 */
public final class ObjectShardStore implements SampleSource {

    private static final ValueLayout.OfFloat FLOAT_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble DOUBLE_LE = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** One listed file of a shard: its object, role, and the size and CRC32C the metadata records. */
    private record ShardObject(ObjectUri uri, String role, long bytes, long crc32c) {
    }

    private final ObjectUri folder;
    private final ObjectCache cache;
    private final boolean closeCache;
    private final int ahead;
    private final ShardLayout layout;
    private final List<List<ShardObject>> shardFiles;
    private final long[] sizes;
    private final long[] starts;
    private final long[] nnz;
    private final long cells;
    private final int genes;
    private final GeneVocabulary vocabulary;
    private final long storedBytes;
    /** The type of the values (the metadata's {@code dtype}), and its size. */
    private final DType dtype;
    private final int valueBytes;
    private final DType castFrom;
    private final long recordedChecksums;
    private final MemorySegment zeros;
    private final ExecutorService stager;
    /** Per shard: its staging (done when mapped), or null when not resident. Guarded by {@code this}. */
    private final CompletableFuture<Resident>[] resident;
    /** Per shard: when a read last used it, for releasing the least recently used without an order. */
    private final long[] lastUsed;
    private long clock;
    /** The epoch's shard order and each shard's position in it; null until {@link #prefetchOrder} is called. */
    private int[] order;
    private int[] positionOf;
    /** The furthest position in the order a read has reached this epoch. */
    private int front = -1;
    private boolean closed;

    @SuppressWarnings("unchecked")
    private ObjectShardStore(Builder settings, JsonNode metadata, Path metadataShownAs) {
        this.folder = settings.folder;
        this.cache = settings.cache;
        this.closeCache = settings.closeCache;
        this.ahead = settings.prefetchShards;
        this.layout = ShardLayout.of(metadata.path("layout").asText(ShardLayout.DENSE.key()));
        this.dtype = ShardStore.dtype(metadata, metadataShownAs);
        this.valueBytes = dtype.byteSize();
        this.castFrom = ShardStore.castFrom(metadata);
        this.recordedChecksums = ShardStore.recordedChecksums(metadata);
        List<String> names = new ArrayList<>();
        metadata.path("vocabulary").forEach(name -> names.add(name.asText()));
        this.vocabulary = new GeneVocabulary(names);
        this.genes = names.size();
        int shards = metadata.path("shards").size();
        this.sizes = new long[shards];
        this.starts = new long[shards];
        this.nnz = new long[shards];
        this.shardFiles = new ArrayList<>();
        long total = 0;
        long bytes = 0;
        int s = 0;
        for (JsonNode shard : metadata.path("shards")) {
            JsonNode listed = shard.path("files");
            if (!listed.isArray() || listed.isEmpty()) {
                throw new InvalidFileException(metadataShownAs, -1, "shard metadata that lists each shard's files "
                        + "with their sizes and CRC32C (format 2 and later)", "the first format: convert the data again "
                        + "with ./memfit shard and upload the new folder");
            }
            List<ShardObject> files = new ArrayList<>();
            for (JsonNode file : listed) {
                if (slot(file.path("role").asText("")) < 0) {
                    continue; // the cell table (Parquet): not needed to read the values
                }
                ShardObject object = new ShardObject(folder.resolve(file.path("file").asText()),
                        file.path("role").asText(""), file.path("bytes").asLong(), file.path("crc32c").asLong());
                files.add(object);
                bytes += object.bytes();
            }
            shardFiles.add(files);
            sizes[s] = shard.path("cells").asLong();
            nnz[s] = shard.path("nnz").asLong(sizes[s] * genes);
            starts[s] = total;
            total += sizes[s];
            s++;
        }
        pinVersions();
        this.cells = total;
        this.storedBytes = bytes;
        this.zeros = MemorySegment.ofArray(new byte[Math.multiplyExact(genes, valueBytes)]);
        this.resident = new CompletableFuture[shards];
        this.lastUsed = new long[shards];
        this.stager = Executors.newSingleThreadExecutor(Threads.daemon("memfit-shard-stager"));
    }

    /**
     * Asks the server for every shard file's version once (HEAD requests, up to 16 at a time: thousands of shards
     * open in seconds, not minutes), so that the cache reads those versions all session and a file replaced later is
     * reported, not mixed in; and checks each size against the metadata.
     */
    private void pinVersions() {
        List<ShardObject> all = shardFiles.stream().flatMap(List::stream).toList();
        java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(16);
        try (ExecutorService heads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<java.util.concurrent.Future<Long>> sizesOnServer = new ArrayList<>();
            for (ShardObject object : all) {
                sizesOnServer.add(heads.submit(() -> {
                    slots.acquire();
                    try {
                        return cache.open(object.uri()).size();
                    } finally {
                        slots.release();
                    }
                }));
            }
            for (int f = 0; f < all.size(); f++) {
                long onServer;
                try {
                    onServer = sizesOnServer.get(f).get();
                } catch (java.util.concurrent.ExecutionException e) {
                    throw e.getCause() instanceof RuntimeException runtime ? runtime
                            : new MemfitException(all.get(f).uri() + ": " + e.getCause(), e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new MemfitException("interrupted while opening " + folder, e);
                }
                ShardObject object = all.get(f);
                if (onServer != object.bytes()) {
                    throw new InvalidFileException(object.uri().toPath(), -1, object.bytes() + " bytes as "
                            + ShardWriter.METADATA + " records", onServer + " bytes on the server (corrupt or replaced)");
                }
            }
        }
    }

    /**
     * Starts configuring a store: {@code setFolder} and {@code setCache} are required.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Settings of an {@link ObjectShardStore}. */
    public static final class Builder {
        private ObjectUri folder;
        private ObjectCache cache;
        private boolean closeCache;
        private int prefetchShards = 2;

        private Builder() {
        }

        /**
         * The shard folder in a bucket (required): the prefix holding {@value ShardWriter#METADATA} and the shards.
         *
         * @param uri such as {@code s3://bucket/shards/}
         * @return this builder
         */
        public Builder setFolder(ObjectUri uri) {
            this.folder = uri;
            return this;
        }

        /**
         * The cache the shards are staged in (required). Its limit should hold the shards in use at once: the current
         * one, the one before it and those prefetched, with the blocks of the one being staged.
         *
         * @param objects the cache
         * @return this builder
         */
        public Builder setCache(ObjectCache objects) {
            this.cache = objects;
            return this;
        }

        /**
         * Whether closing the store closes the cache too (default false: the caller keeps it).
         *
         * @param close true to close it with the store
         * @return this builder
         */
        public Builder optCloseCache(boolean close) {
            this.closeCache = close;
            return this;
        }

        /**
         * How many shards of the epoch's order are staged ahead of the one being read (default 2).
         *
         * @param shards 0 or more
         * @return this builder
         */
        public Builder optPrefetchShards(int shards) {
            this.prefetchShards = shards;
            return this;
        }

        /**
         * Reads and checks the metadata and pins the version of every shard file (a HEAD each).
         *
         * @return the store, to be closed
         */
        public ObjectShardStore build() {
            if (folder == null) {
                throw new MemfitException("ObjectShardStore: call setFolder(ObjectUri.parse(\"s3://bucket/shards/\"))");
            }
            if (cache == null) {
                throw new MemfitException("ObjectShardStore: call setCache(cache), such as ObjectCache.fromEnvironment()");
            }
            if (prefetchShards < 0) {
                throw new MemfitException("ObjectShardStore: optPrefetchShards must be 0 or more, got " + prefetchShards);
            }
            try {
                ObjectUri metadataUri = folder.resolve(ShardWriter.METADATA);
                ObjectCache.StagedObject staged = cache.stage(metadataUri);
                JsonNode metadata = ShardStore.checkedMetadata(staged.file(), metadataUri.toPath());
                return new ObjectShardStore(this, metadata, metadataUri.toPath());
            } catch (RuntimeException e) {
                if (closeCache) {
                    cache.close();
                }
                throw e;
            }
        }
    }

    /** A staged, checked and mapped shard: its arrays, the pins of its files, and a lock that readers share. */
    private final class Resident {
        final NpyArray[] arrays;
        final ObjectCache.Pin[] pins;
        final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        boolean released;

        Resident(NpyArray[] arrays, ObjectCache.Pin[] pins) {
            this.arrays = arrays;
            this.pins = pins;
        }

        /** Unmaps and unpins once no read uses it. */
        void release() {
            lock.writeLock().lock();
            try {
                if (!released) {
                    released = true;
                    for (NpyArray array : arrays) {
                        if (array != null) {
                            array.close();
                        }
                    }
                    for (ObjectCache.Pin pin : pins) {
                        if (pin != null) {
                            pin.close();
                        }
                    }
                }
            } finally {
                lock.writeLock().unlock();
            }
        }
    }

    /** Where a file of a shard goes: the values (a dense shard's one array, or CSR data) 0, indices 1, row pointers 2. */
    private static int slot(String role) {
        return switch (role) {
            case "x", "data", "" -> 0;
            case "indices" -> 1;
            case "indptr" -> 2;
            default -> -1;
        };
    }

    /** Stages, checks and maps one shard's files (on the stager thread, or the reader's). */
    private Resident stage(int shard) {
        List<ShardObject> files = shardFiles.get(shard);
        NpyArray[] arrays = new NpyArray[layout == ShardLayout.DENSE ? 1 : 3];
        ObjectCache.Pin[] pins = new ObjectCache.Pin[files.size()];
        try {
            for (int f = 0; f < files.size(); f++) {
                ShardObject object = files.get(f);
                ObjectCache.PinnedObject pinned = cache.stagePinned(object.uri());
                ObjectCache.StagedObject staged = pinned.staged();
                pins[f] = pinned.pin();
                // the bytes the metadata recorded when the shard was written, as ShardStore.validate checks them; a
                // staged copy damaged on disk is set aside and staged once more from its (checked) blocks
                long crc = ShardWriter.crc32c(staged.file());
                if (crc != object.crc32c()) {
                    pins[f].close();
                    cache.discardStaged(staged);
                    pinned = cache.stagePinned(object.uri());
                    staged = pinned.staged();
                    pins[f] = pinned.pin();
                    crc = ShardWriter.crc32c(staged.file());
                }
                if (crc != object.crc32c()) {
                    throw new InvalidFileException(object.uri().toPath(), -1, object.bytes() + " bytes of CRC32C "
                            + Long.toHexString(object.crc32c()) + " as " + ShardWriter.METADATA + " records",
                            staged.info().size() + " bytes of CRC32C " + Long.toHexString(crc) + " (corrupt or replaced)");
                }
                int slot = slot(object.role());
                long count = layout == ShardLayout.DENSE ? sizes[shard] : slot == 2 ? sizes[shard] + 1 : nnz[shard];
                DType type = slot == 1 ? DType.INT32 : slot == 2 ? DType.INT64 : dtype;
                ShardStore.checkArray(staged.file(), type, count, layout == ShardLayout.DENSE ? genes : -1);
                arrays[slot] = Npy.map(staged.file());
            }
            for (int slot = 0; slot < arrays.length; slot++) {
                if (arrays[slot] == null) {
                    throw new InvalidFileException(folder.resolve(ShardWriter.METADATA).toPath(), -1, "the "
                            + (slot == 0 ? "data" : slot == 1 ? "indices" : "indptr") + " file of shard " + shard,
                            "no such file listed");
                }
            }
            if (layout == ShardLayout.SPARSE) {
                ShardStore.checkPointers(arrays[2], nnz[shard]);
            }
            return new Resident(arrays, pins);
        } catch (RuntimeException e) {
            new Resident(arrays, pins).release();
            throw e;
        }
    }

    /**
     * Tells the store the order in which an epoch will read the shards, so that it stages the next ones ahead; call
     * it when an epoch starts (a loader built by {@code Datasets.shards("s3://...")} does).
     *
     * @param shardOrder every shard number once, in reading order
     */
    public synchronized void prefetchOrder(int[] shardOrder) {
        int[] positions = new int[sizes.length];
        Arrays.fill(positions, -1);
        for (int k = 0; k < shardOrder.length; k++) {
            positions[shardOrder[k]] = k;
        }
        this.order = shardOrder.clone();
        this.positionOf = positions;
        this.front = -1;
        if (shardOrder.length > 0) {
            arrange(shardOrder[0]);
        }
    }

    /**
     * Makes a shard resident (staging it if needed) and returns its staging. With an order, the first read of a shard
     * further on in it moves the window: the shard before it, it, and the next {@code ahead} stay (those missing are
     * staged, in order), the others are released. Without one, the least recently used beyond as many shards are.
     */
    private synchronized CompletableFuture<Resident> arrange(int shard) {
        if (closed) {
            throw new MemfitException(folder + ": the shard store is closed");
        }
        lastUsed[shard] = ++clock;
        CompletableFuture<Resident> present = resident[shard];
        boolean usable = present != null && !present.isCompletedExceptionally();
        int p = order == null ? -1 : positionOf[shard];
        if (p < 0) {
            if (!usable) {
                resident[shard] = CompletableFuture.supplyAsync(() -> stage(shard), stager);
                releaseLeastRecentlyUsed(shard);
            }
            return resident[shard];
        }
        if (p <= front) {
            // a batch still reading behind the front (a boundary, a slow reader thread): never move the window back
            if (!usable) {
                resident[shard] = CompletableFuture.supplyAsync(() -> stage(shard), stager);
            }
            return resident[shard];
        }
        front = p;
        boolean[] keep = new boolean[sizes.length];
        if (p > 0) {
            keep[order[p - 1]] = true; // batches straddling the boundary still read it
        }
        List<Integer> toStage = new ArrayList<>();
        for (int k = p; k <= p + ahead && k < order.length; k++) {
            keep[order[k]] = true;
            toStage.add(order[k]);
        }
        for (int other = 0; other < resident.length; other++) {
            if (!keep[other]) {
                release(other);
            }
        }
        for (int next : toStage) {
            CompletableFuture<Resident> staging = resident[next];
            if (staging == null || staging.isCompletedExceptionally()) {
                // one after the other on the stager thread, in the order they will be read
                resident[next] = CompletableFuture.supplyAsync(() -> stage(next), stager);
            }
        }
        return resident[shard];
    }

    /** Without an order: keeps the most recently used shards, as many as a window holds (lock held). */
    private void releaseLeastRecentlyUsed(int shard) {
        int capacity = ahead + 2;
        Integer[] byUse = new Integer[sizes.length];
        for (int i = 0; i < byUse.length; i++) {
            byUse[i] = i;
        }
        Arrays.sort(byUse, (a, b) -> Long.compare(lastUsed[b], lastUsed[a]));
        int kept = 0;
        for (int candidate : byUse) {
            if (resident[candidate] == null) {
                continue;
            }
            if (candidate == shard || kept < capacity - 1) {
                kept += candidate == shard ? 0 : 1;
                continue;
            }
            release(candidate);
        }
    }

    /** Lets a shard go: unmapped and unpinned once staged (a prefetch still running finishes first) and unread. */
    private void release(int shard) {
        CompletableFuture<Resident> leaving = resident[shard];
        if (leaving != null) {
            resident[shard] = null;
            leaving.thenAccept(Resident::release);
        }
    }

    /** The shard, resident: waits for its staging (the reader's wait for the network). */
    private Resident acquire(int shard) {
        for (int attempt = 0; ; attempt++) {
            Resident shardNow;
            try {
                shardNow = arrange(shard).join();
            } catch (CompletionException e) {
                synchronized (this) {
                    if (resident[shard] != null && resident[shard].isCompletedExceptionally()) {
                        resident[shard] = null;
                    }
                }
                throw e.getCause() instanceof RuntimeException runtime ? runtime
                        : new MemfitException(folder + ": staging shard " + shard + " failed: " + e.getCause(), e.getCause());
            }
            shardNow.lock.readLock().lock();
            if (!shardNow.released) {
                return shardNow;
            }
            shardNow.lock.readLock().unlock();
            if (attempt > 100) {
                throw new MemfitException(folder + ": shard " + shard + " was released while reading it over and over; "
                        + "raise optPrefetchShards");
            }
        }
    }

    @Override
    public void readBatch(long[] cellIndices, MemorySegment into) {
        long rowBytes = (long) genes * valueBytes;
        int held = -1;
        Resident shard = null;
        try {
            for (int i = 0; i < cellIndices.length; i++) {
                int s = shardOf(cellIndices[i]);
                if (s != held) {
                    if (shard != null) {
                        shard.lock.readLock().unlock();
                        shard = null;
                    }
                    shard = acquire(s);
                    held = s;
                }
                readRow(shard, s, cellIndices[i] - starts[s], into, i * rowBytes);
            }
        } finally {
            if (shard != null) {
                shard.lock.readLock().unlock();
            }
        }
    }

    @Override
    public void read(long index, MemorySegment into) {
        readBatch(new long[]{index}, into);
    }

    private void readRow(Resident shard, int s, long row, MemorySegment into, long offset) {
        long rowBytes = (long) genes * valueBytes;
        if (layout == ShardLayout.DENSE) {
            MemorySegment.copy(shard.arrays[0].data(), row * rowBytes, into, offset, rowBytes);
            return;
        }
        MemorySegment pointers = shard.arrays[2].data();
        long start = pointers.get(LONG_LE, row * Long.BYTES);
        long end = pointers.get(LONG_LE, (row + 1) * Long.BYTES);
        int n = Math.toIntExact(end - start);
        MemorySegment rowValues = shard.arrays[0].data().asSlice(start * valueBytes, (long) n * valueBytes);
        boolean wide = valueBytes == Double.BYTES;
        MemorySegment rowIndices = shard.arrays[1].data().asSlice(start * Integer.BYTES, (long) n * Integer.BYTES);
        MemorySegment out = into.asSlice(offset, rowBytes);
        MemorySegment.copy(zeros, 0, out, 0, rowBytes);
        for (int k = 0; k < n; k++) {
            int gene = rowIndices.getAtIndex(INT_LE, k);
            if (Integer.compareUnsigned(gene, genes) >= 0) {
                throw new InvalidFileException(shardFiles.get(s).get(1).uri().toPath(),
                        shard.arrays[1].header().dataOffset() + (start + k) * Integer.BYTES,
                        "gene indices in [0, " + genes + ") (the vocabulary)", "index " + gene);
            }
            if (wide) {
                out.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, gene, rowValues.getAtIndex(DOUBLE_LE, k));
            } else {
                out.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, gene, rowValues.getAtIndex(FLOAT_LE, k));
            }
        }
    }

    private int shardOf(long index) {
        if (index < 0 || index >= cells) {
            throw new IndexOutOfBoundsException("cell " + index + " outside [0, " + cells + ") of " + folder);
        }
        int shard = Arrays.binarySearch(starts, index);
        if (shard >= 0) {
            while (shard + 1 < starts.length && starts[shard + 1] == index) {
                shard++;
            }
            return shard;
        }
        return -shard - 2;
    }

    /**
     * Cells per shard, in order.
     *
     * @return sizes
     */
    public long[] shardSizes() {
        return sizes.clone();
    }

    /**
     * How the shards store their cells.
     *
     * @return dense or sparse (CSR)
     */
    public ShardLayout layout() {
        return layout;
    }

    /**
     * The genes of every cell, in column order.
     *
     * @return the vocabulary
     */
    public GeneVocabulary vocabulary() {
        return vocabulary;
    }

    /**
     * The values stored: the non-zero values of sparse shards, every cell x gene of dense ones.
     *
     * @return the stored values
     */
    public long storedValues() {
        return Arrays.stream(nnz).sum();
    }

    /**
     * The bytes of the shard files the metadata lists (what an epoch downloads when nothing is cached).
     *
     * @return bytes
     */
    public long storedBytes() {
        return storedBytes;
    }

    /**
     * The shard folder.
     *
     * @return its address
     */
    public ObjectUri folder() {
        return folder;
    }

    @Override
    public long size() {
        return cells;
    }

    @Override
    public Shape sampleShape() {
        return new Shape(genes);
    }

    /**
     * The type of the shards' values, in which cells are read: float32, or float64 for shards of a float64 source.
     *
     * @return {@code FLOAT32} or {@code FLOAT64}
     */
    @Override
    public DType dtype() {
        return dtype;
    }

    /**
     * The type the source's values were cast from, as {@link ShardStore#castFrom()}.
     *
     * @return {@code FLOAT64}, or null
     */
    public DType castFrom() {
        return castFrom;
    }

    @Override
    public String fingerprint() {
        return folder + ": " + layout + " shards, " + cells + " cells x " + genes + " genes, shard sizes hash "
                + Arrays.hashCode(sizes) + ", " + storedValues() + (dtype == DType.FLOAT64 ? " float64" : "")
                + " values in " + storedBytes + " bytes" + dev.memfit.source.SampleSource.content(recordedChecksums);
    }

    @Override
    public String describe() {
        return sizes.length + (layout == ShardLayout.SPARSE ? " sparse (CSR) shards" : " shards")
                + (dtype == DType.FLOAT64 ? " of float64" : "") + " in " + folder;
    }

    /** Stops staging, unmaps and unpins the resident shards, and closes the cache when it was handed over. */
    @Override
    public void close() {
        List<CompletableFuture<Resident>> leaving = new ArrayList<>();
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            for (int s = 0; s < resident.length; s++) {
                if (resident[s] != null) {
                    leaving.add(resident[s]);
                    resident[s] = null;
                }
            }
        }
        stager.shutdown();
        for (CompletableFuture<Resident> staging : leaving) {
            try {
                staging.join().release();
            } catch (CompletionException | java.util.concurrent.CancellationException ignored) {
                // a failed staging holds nothing
            }
        }
        stager.shutdownNow();
        if (closeCache) {
            cache.close();
        }
    }
}
