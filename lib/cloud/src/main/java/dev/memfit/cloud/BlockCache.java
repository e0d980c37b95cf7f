package dev.memfit.cloud;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.cloud.CacheStatistics;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectChangedException;
import dev.memfit.io.cloud.ObjectInfo;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.storage.Storage;
import dev.memfit.io.storage.TempFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * A local cache of objects in cloud storage that can be trusted: objects are read in fixed-size blocks (8 MiB by
 * default) fetched with range requests, and every byte served from the cache is checked against a CRC32C taken when it
 * was downloaded.
 *
 * <p><b>Content addressed.</b> A cached object lives under a name derived from the endpoint, bucket, key and ETag of
 * the version it holds (and the block size), so a new version of an object never finds the old one's blocks. The
 * cache pins the version of each object when it first opens it ({@link #open}): a later range request that finds
 * another version on the server fails with an {@link ObjectChangedException}, and bytes of two versions are never
 * mixed. {@link #refresh()} lets the next read see new versions (call it between epochs).
 *
 * <p><b>Verified.</b> A block file holds the block's bytes followed by a CRC32C of each {@value #PIECE}-byte piece
 * (and a CRC of that table). Blocks are read through read-only memory mappings, and no byte is served before the
 * CRC of its piece was checked in that mapping: the first read of a piece checks it (a read of a few bytes checks one
 * 32 KiB piece), later reads of the same mapping reuse the check, since block files are never written in place; a
 * block mapped again (by a new cache, another process, or after this one dropped the mapping) is checked again. A
 * piece that does not match its CRC makes the block count as corrupt: it is deleted and fetched again. Whole objects are staged with
 * {@link #stage}, which checks them against the ETag where the ETag is the object's MD5 (single-part uploads) and
 * records the CRC32C of each MiB of the copy; a copy found in the folder is checked against those before it is handed
 * out (once per process: its readers, such as jhdf or a mapping, read it without any block check), and a damaged one
 * is staged again from its blocks, fetching those that fail their own check.
 *
 * <p><b>Safe.</b> Blocks are written under a temporary name and renamed into place ({@link TempFiles},
 * {@link AtomicMove}); inserting a block and evicting others happen under an exclusive file lock on
 * {@code FOLDER/.lock}, so several processes (and several caches in one process) can share a folder. The cache holds
 * at most {@link Builder#optLimitBytes} bytes of finished blocks and staged objects: before a block is added, the least
 * recently used files are removed until it fits, except files held by this JVM's caches (pinned, in a read-ahead
 * window, or being fetched or mapped by a read), which may keep the folder above its limit until released. Reads mark
 * the blocks they use as recently used (their modification time, which every process sees), a block at most once
 * between two insertions of this cache.
 *
 * <p><b>One download per block.</b> Loaders announce the reads of a batch before reading it ({@link #willRead}), and
 * a read over several blocks announces itself. Announced reads form a read-ahead window, in the order announced, of
 * at most as many distinct blocks as the limit holds besides the block being read: those blocks are kept from eviction
 * until their announced reads are done (mapped ones too: whether a later insertion will evict one cannot be known
 * when its read is announced), and the missing ones are fetched in the background in that order, up to
 * {@link Builder#optParallelRequests} at a time. So read-ahead never evicts a block fetched ahead and not yet read,
 * nor one a read is using, and a pass in file order downloads each block once whatever the limit; a limit of one block
 * (a warning says so) fetches nothing ahead, each block as it is read. A random order over an object larger than the
 * limit does download blocks again: the limit cannot hold what later batches need (stage the object with
 * {@link #stage} when the limit holds it, or read in a block-shuffled order). Processes and caches sharing a folder
 * see each other's downloads: a download holds its block's lock ({@code FOLDER/.fetch.lock}, one byte per block,
 * released by the system when its process dies), and a block another one is downloading is waited for, then read from
 * the folder. What a cache holds from eviction is known to its own JVM only: another process may evict it, and it is
 * then downloaded again.
 *
 * <p>The cache is a {@link Storage}: paths in the form {@link ObjectUri#toPath()} ({@code s3:/bucket/key}) read
 * objects, so a reader that takes a storage reads a bucket through the cache. It is thread-safe; reads spanning
 * several missing blocks fetch them in parallel (within the read-ahead window). One exception to "through blocks":
 * the first read within an object's first {@value #HEADER_BYTES} bytes, while its first block is not cached, coming
 * or announced (and is much larger than that), goes straight to the store, uncached and unchecked by a CRC (as any
 * byte fresh from the server), so that reading a header (of a {@code .npy}, of every MRC stack of a listing, for
 * {@code inspect}) costs one small request rather than a block.
 *
 * <pre>{@code
 * try (ObjectCache cache = BlockCache.builder().setStore(ObjectStore.fromEnvironment())
 *         .setFolder(Path.of("/scratch/memfit-cache")).optLimitBytes(50L << 30).build()) {
 *     ObjectUri uri = ObjectUri.parse("s3://atlas/cells.npy");
 *     cache.read(uri, 0, header);
 *     System.out.println(cache.statistics());
 * }
 * }</pre>
 */
public final class BlockCache implements ObjectCache {

    /** The bytes covered by one CRC32C in a block file: what a read of a few bytes reads and checks. */
    public static final int PIECE = 32 * 1024;
    /** Reads within an object's first bytes go straight to the store while its first block is not cached. */
    static final int HEADER_BYTES = 64 * 1024;
    /** The default block size: 8 MiB. */
    public static final int DEFAULT_BLOCK_BYTES = 8 << 20;
    static final long MAGIC = 0x3230304b4c42464dL; // "MFBLK002" in little-endian byte order

    /**
     * What a block file's checksum table is bound to: its entry (the object's version) and its index, both from its
     * own path, so that a block file moved into another entry or renamed to another index fails its check instead of
     * serving another object's bytes (version 2; a version-1 block, bound to nothing, is fetched again).
     *
     * @param crc the table's checksum, updated with the binding
     * @param file the block file
     */
    static void bind(CRC32C crc, Path file) {
        String binding = file.getParent().getFileName() + "/" + file.getFileName();
        crc.update(binding.getBytes(StandardCharsets.UTF_8));
    }
    static final String BLOCK_SUFFIX = ".block";
    static final String STAGED = "object";
    static final String STAGED_NOTE = "object.verified";
    /**
     * Block files kept mapped per cache at most: a mapping holds no file descriptor, and a warm epoch over a few GiB
     * of 8 MiB blocks then opens none (it was 64 open channels before mappings). Fewer when the limit holds fewer
     * blocks ({@link #openBlocks}): a mapping of a file another process evicted keeps its disk space until unmapped.
     */
    private static final int OPEN_BLOCKS = 512;
    /** One lock per cache folder in this JVM: a process can hold a file lock only once. */
    private static final Map<Path, ReentrantLock> FOLDER_LOCKS = new ConcurrentHashMap<>();
    private static final ThreadLocal<CRC32C> CRC = ThreadLocal.withInitial(CRC32C::new);

    private final ObjectStore store;
    private final Path folder;
    private final long limitBytes;
    private final int blockBytes;
    private final Semaphore fetchSlots;
    private final ExecutorService fetchers = Executors.newVirtualThreadPerTaskExecutor();
    private final Map<ObjectUri, ObjectInfo> opened = new ConcurrentHashMap<>();
    /**
     * Objects read through the {@link Storage} interface, by the path readers pass (the same instance each time, so
     * its hash is cached): the pinned version, its entry folder and each block's file, so that a read of a cached
     * block neither parses the path nor builds a file name. Cleared with {@link #opened}.
     */
    private final Map<Path, Resolved> resolved = new ConcurrentHashMap<>();
    /** Downloads of this cache in progress, by block file: a second reader of the block waits for the first. */
    private final Map<Path, CompletableFuture<Void>> inFlight = new ConcurrentHashMap<>();
    /** Reads announced ({@link #willRead}, and reads over several blocks), and the blocks protected and fetched ahead. */
    private final ReadAhead<Resolved> readAhead;
    /** The per-block download locks of the folder, shared with the other caches and processes on it. */
    private final FetchLocks fetchLocks;
    /** Full blocks (with their checksum tables) the limit holds. */
    private final long limitBlocks;
    /** Mapped block files by path; read without a lock (the hot path), evicted approximately by last use. */
    private final Map<Path, BlockHandle> handles = new ConcurrentHashMap<>();
    /** The most blocks kept mapped: {@link #OPEN_BLOCKS}, or as many as the limit holds, at least 4. */
    private final int openBlocks;
    /** The cache folder of each pinned version: computing it hashes with SHA-256, too slow for every small read. */
    private final Map<ObjectInfo, Path> entries = new ConcurrentHashMap<>();
    /**
     * Blocks this cache has inserted so far. A read marks its block as used (its modification time, which eviction
     * sorts by) only when a block was inserted since the block was last marked: least-recently-used order only matters
     * to the next eviction, and a system call per small read cost more than the read itself.
     */
    private final java.util.concurrent.atomic.AtomicLong insertions = new java.util.concurrent.atomic.AtomicLong();
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder bytesFromCache = new LongAdder();
    private final LongAdder waitedNanos = new LongAdder();
    private final LongAdder corruptBlocks = new LongAdder();
    private final LongAdder evictedBlocks = new LongAdder();
    /**
     * Files the caches of this JVM keep from eviction (by absolute path, so one map serves every folder), with how many
     * holds each has: pinned by readers ({@link #pin}), blocks in a read-ahead window (announced reads still to come,
     * fetched ahead or not), and blocks a read is fetching or mapping. Eviction by any cache of the JVM leaves them in
     * place: two loaders with a cache each on one folder do not evict each other's. In-process only; another process
     * sharing the folder may still evict them (a reader keeps them open or mapped, which outlives the deletion on
     * POSIX file systems; a block fetched ahead is then fetched again).
     */
    private static final Map<Path, Integer> HELD = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    /** The last eviction left the folder above the limit because of held files (see {@link #trimIfOverLimit}). */
    private volatile boolean overLimit;
    /** Object versions whose head was read directly once ({@link #readDirect}). */
    private final Set<ObjectInfo> directHeads = ConcurrentHashMap.newKeySet();

    private BlockCache(Builder settings) {
        this.store = settings.store;
        this.folder = settings.folder.toAbsolutePath().normalize();
        this.limitBytes = settings.limitBytes;
        this.blockBytes = settings.blockBytes;
        this.openBlocks = (int) Math.max(4, Math.min(OPEN_BLOCKS, settings.limitBytes / settings.blockBytes));
        this.fetchSlots = new Semaphore(settings.parallelRequests);
        this.limitBlocks = settings.limitBytes / blockOnDisk(settings.blockBytes);
        // every block the limit holds but one, the block being read; a cache of one block fetches as it reads
        this.readAhead = new ReadAhead<>(new WindowBlocks(), (int) Math.min(1 << 20, limitBlocks - 1),
                settings.parallelRequests);
        try {
            Files.createDirectories(folder);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the cache folder " + folder, e);
        }
        this.fetchLocks = FetchLocks.open(folder);
    }

    /** The bytes a full block takes in the folder: its data and its checksum table. */
    static long blockOnDisk(int blockBytes) {
        return blockBytes + 4L * pieces(blockBytes) + 12;
    }

    /**
     * Starts configuring a cache.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Settings of a {@link BlockCache}: the store and the folder are required. */
    public static final class Builder {
        private ObjectStore store;
        private Path folder;
        private long limitBytes = 10L << 30;
        private int blockBytes = DEFAULT_BLOCK_BYTES;
        private int parallelRequests = 4;

        private Builder() {
        }

        /**
         * Where objects come from; the cache closes it when it is closed.
         *
         * @param objects the store
         * @return this builder
         */
        public Builder setStore(ObjectStore objects) {
            this.store = objects;
            return this;
        }

        /**
         * The cache folder on local disk (created when missing), which several processes may share.
         *
         * @param path the folder
         * @return this builder
         */
        public Builder setFolder(Path path) {
            this.folder = path;
            return this;
        }

        /**
         * The most bytes of cached blocks and staged objects kept in the folder (default 10 GiB); least recently
         * used ones are removed to stay below. Downloads in progress come on top (at most one block per parallel
         * request). Read-ahead uses what the limit holds besides one block: a limit of fewer than two blocks (with
         * their checksum tables) allows none, and a warning says so.
         *
         * @param bytes the limit, at least one block with its checksum table
         * @return this builder
         */
        public Builder optLimitBytes(long bytes) {
            this.limitBytes = bytes;
            return this;
        }

        /**
         * The size of the blocks fetched by range requests (default 8 MiB): smaller blocks waste less on random
         * reads of small records, larger ones need fewer requests.
         *
         * @param bytes a multiple of {@value BlockCache#PIECE} between 32 KiB and 1 GiB
         * @return this builder
         */
        public Builder optBlockBytes(int bytes) {
            this.blockBytes = bytes;
            return this;
        }

        /**
         * How many range requests one read may have in flight at once (default 4).
         *
         * @param requests at least 1
         * @return this builder
         */
        public Builder optParallelRequests(int requests) {
            this.parallelRequests = requests;
            return this;
        }

        /**
         * Creates the cache (and its folder).
         *
         * @return the cache
         */
        public BlockCache build() {
            if (store == null) {
                throw new MemfitException("BlockCache: call setStore(ObjectStore.fromEnvironment()) or another store");
            }
            if (folder == null) {
                throw new MemfitException("BlockCache: call setFolder(path) with a folder on local disk for the cache");
            }
            if (blockBytes < PIECE || blockBytes % PIECE != 0 || blockBytes > (1 << 30)) {
                throw new MemfitException("BlockCache: optBlockBytes must be a multiple of " + PIECE
                        + " between 32 KiB and 1 GiB, got " + blockBytes);
            }
            if (limitBytes < blockOnDisk(blockBytes)) {
                throw new MemfitException("BlockCache: optLimitBytes (" + limitBytes + ") must hold at least one block "
                        + "with its checksums (" + blockOnDisk(blockBytes) + " bytes for blocks of " + blockBytes
                        + "), and two (" + 2 * blockOnDisk(blockBytes) + ") to fetch ahead; raise the limit or lower "
                        + "optBlockBytes");
            }
            if (parallelRequests < 1) {
                throw new MemfitException("BlockCache: optParallelRequests must be at least 1, got " + parallelRequests);
            }
            if (limitBytes < 2 * blockOnDisk(blockBytes)) {
                System.getLogger(BlockCache.class.getName()).log(System.Logger.Level.WARNING, "the cache " + folder
                        + " is limited to " + limitBytes + " bytes, one block of " + blockBytes + ": blocks are fetched "
                        + "one at a time as they are read, none ahead; a limit of at least " + 2 * blockOnDisk(blockBytes)
                        + " bytes (two blocks with their checksums) lets reads overlap downloads");
            }
            return new BlockCache(this);
        }
    }

    /** The environment variable naming the cache folder (default {@code ~/.cache/memfit/objects}). */
    public static final String FOLDER_VARIABLE = "MEMFIT_CACHE_DIR";
    /** The environment variable holding the cache's size limit: bytes, or a number with K, M, G or T (binary). */
    public static final String LIMIT_VARIABLE = "MEMFIT_CACHE_LIMIT";

    /**
     * A cache set up from the environment: the store of {@link ObjectStore#fromEnvironment()}, the folder of
     * {@link #defaultFolder} and the limit of {@link #defaultLimit}, with 8 MiB blocks.
     *
     * @return the cache; closing it closes the store
     */
    public static BlockCache fromEnvironment() {
        Map<String, String> environment = System.getenv();
        return builder().setStore(ObjectStore.fromEnvironment()).setFolder(defaultFolder(environment))
                .optLimitBytes(defaultLimit(environment)).build();
    }

    /**
     * The cache folder the environment names: {@value #FOLDER_VARIABLE}, else {@code $XDG_CACHE_HOME/memfit/objects},
     * else {@code ~/.cache/memfit/objects}.
     *
     * @param environment the variables, such as {@link System#getenv()}
     * @return the folder (it may not exist yet)
     */
    public static Path defaultFolder(Map<String, String> environment) {
        String named = environment.get(FOLDER_VARIABLE);
        if (named != null && !named.isBlank()) {
            return Path.of(named.strip());
        }
        String xdg = environment.get("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg.strip())
                : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("memfit").resolve("objects");
    }

    /**
     * The size limit the environment sets with {@value #LIMIT_VARIABLE} ({@code 50G}, {@code 512M}, or bytes), else
     * 10 GiB.
     *
     * @param environment the variables
     * @return bytes
     * @throws MemfitException when the variable is not a size
     */
    public static long defaultLimit(Map<String, String> environment) {
        String text = environment.get(LIMIT_VARIABLE);
        if (text == null || text.isBlank()) {
            return 10L << 30;
        }
        String value = text.strip().toUpperCase(java.util.Locale.ROOT);
        if (value.endsWith("IB")) {
            value = value.substring(0, value.length() - 2);
        } else if (value.endsWith("B")) {
            value = value.substring(0, value.length() - 1);
        }
        int shift = switch (value.isEmpty() ? ' ' : value.charAt(value.length() - 1)) {
            case 'K' -> 10;
            case 'M' -> 20;
            case 'G' -> 30;
            case 'T' -> 40;
            default -> 0;
        };
        String number = shift == 0 ? value : value.substring(0, value.length() - 1).strip();
        try {
            double amount = Double.parseDouble(number);
            if (!(amount > 0) || Double.isInfinite(amount)) {
                throw new NumberFormatException(number);
            }
            return (long) (amount * (1L << shift));
        } catch (NumberFormatException e) {
            throw new MemfitException(LIMIT_VARIABLE + "=" + text + ": expected a size such as 50G, 512M or a number "
                    + "of bytes");
        }
    }

    /**
     * The version of an object this cache reads: asked from the server once (HEAD), then kept until
     * {@link #refresh()}.
     *
     * @param uri the object
     * @return its size and ETag
     */
    public ObjectInfo open(ObjectUri uri) {
        ObjectInfo known = opened.get(uri);
        if (known != null) {
            return known;
        }
        return opened.computeIfAbsent(uri, store::head);
    }

    /**
     * Lists the objects under a prefix, asking the server (one request a page): what a zarr store in a bucket holds,
     * with each object's size and ETag.
     *
     * @param prefix the bucket and key prefix, such as {@code s3://bucket/atlas.zarr/}
     * @return every object under it, in key order
     */
    public java.util.List<ObjectInfo> list(ObjectUri prefix) {
        return store.list(prefix);
    }

    /** Forgets the versions pinned by {@link #open}, so that the next reads see what the server has now. */
    public void refresh() {
        opened.clear();
        resolved.clear();
        readAhead.clear(); // announcements of the old versions' blocks
    }

    /**
     * Reads {@code into.byteSize()} bytes of an object through the cache.
     *
     * @param uri the object
     * @param position the first byte
     * @param into where the bytes go
     * @throws InvalidFileException when the object ends before
     * @throws ObjectChangedException when a block still to fetch belongs to a newer version on the server
     */
    public void read(ObjectUri uri, long position, MemorySegment into) {
        long length = into.byteSize();
        if (length == 0) {
            return;
        }
        read(resolve(uri.toPath()), position, into);
    }

    /** An object's pinned version, entry folder and block files, made once per object read through a path. */
    private final class Resolved {
        final ObjectInfo info;
        final Path entry;
        private final Path[] blockFiles;
        /** A read of the first block was announced: its head is then read through the block, not directly. */
        volatile boolean headAnnounced;

        Resolved(ObjectInfo info, Path entry) {
            this.info = info;
            this.entry = entry;
            this.blockFiles = new Path[(int) Math.max(1, (info.size() + blockBytes - 1) / blockBytes)];
        }

        /** The block's file; racy on purpose: two threads may build the same path once each. */
        Path blockFile(long block) {
            Path known = blockFiles[(int) block];
            if (known == null) {
                known = BlockCache.blockFile(entry, block);
                blockFiles[(int) block] = known;
            }
            return known;
        }
    }

    private Resolved resolve(Path file) {
        Resolved known = resolved.get(file);
        if (known != null) {
            return known;
        }
        ObjectInfo info = open(ObjectUri.of(file));
        Resolved made = new Resolved(info, entry(info));
        // kept only while the version is still the one pinned: a refresh() between the check and the put would
        // otherwise leave the old version in place, so the check is repeated after it
        if (opened.get(info.uri()) == info && resolved.putIfAbsent(file, made) == null
                && opened.get(info.uri()) != info) {
            resolved.remove(file, made);
        }
        return made;
    }

    private void read(Resolved object, long position, MemorySegment into) {
        long length = into.byteSize();
        ObjectInfo info = object.info;
        if (position < 0 || position + length > info.size()) {
            throw new InvalidFileException(info.uri().toPath(), position, length + " bytes from byte " + position,
                    "an object of " + info.size() + " bytes");
        }
        long first = position / blockBytes;
        long last = (position + length - 1) / blockBytes;
        if (position + length <= HEADER_BYTES && blockLength(info, 0) > 2L * HEADER_BYTES
                && readDirect(object, position, into)) {
            return;
        }
        if (first == last) {
            Path file = object.blockFile(first);
            readBlock(info, object.entry, file, first, position - first * blockBytes, into, false);
            readAhead.consume(file);
            return;
        }
        // A read over several blocks announces itself: its blocks are fetched ahead within the read-ahead window (in
        // parallel, up to the parallel-request limit) and each one leaves the window once copied, so that a read
        // larger than the limit streams through it rather than evicting its own blocks before it copies them.
        boolean[] missing = new boolean[(int) (last - first + 1)];
        for (long block = first; block <= last; block++) {
            Path file = object.blockFile(block);
            missing[(int) (block - first)] = !handles.containsKey(file) && !Files.exists(file);
        }
        List<ReadAhead.Entry<Resolved>> own = announce(object, first, last, true);
        try {
            for (long block = first; block <= last; block++) {
                long blockStart = block * blockBytes;
                long from = Math.max(position, blockStart);
                long to = Math.min(position + length, blockStart + blockLength(info, block));
                Path file = object.blockFile(block);
                readBlock(info, object.entry, file, block, from - blockStart, into.asSlice(from - position, to - from),
                        missing[(int) (block - first)]);
                readAhead.consume(file);
            }
        } finally {
            readAhead.withdraw(own); // those a failure left, or that older announcements stood for
        }
    }

    /**
     * Reads bytes of an object's head, while its first block is neither cached, coming nor announced, straight from
     * the store with one small range request instead of downloading the whole block first: a header (a {@code .npy}'s,
     * each MRC stack's of a listing, an inspected file's) costs a round trip, not a block of megabytes, and a cold
     * epoch's blocks all download in parallel with the epoch. Once per object version and cache: a reader that goes
     * on reading the head in small pieces (a text parser) then gets the block, as it would pay a round trip per piece
     * otherwise. These bytes are not cached; the request is pinned to the version like any other.
     *
     * @return false when the first block is there, coming, or announced (read it through the cache)
     */
    private boolean readDirect(Resolved object, long position, MemorySegment into) {
        Path file = object.blockFile(0);
        if (handles.containsKey(file) || inFlight.containsKey(file) || object.headAnnounced
                || readAhead.announced(file) || Files.exists(file) || !directHeads.add(object.info)) {
            return false;
        }
        long start = System.nanoTime();
        acquireFetchSlot(object.info);
        try {
            store.read(object.info.uri(), object.info.etag(), position, into);
        } finally {
            fetchSlots.release();
            waitedNanos.add(System.nanoTime() - start);
        }
        misses.increment();
        return true;
    }

    /**
     * Copies part of one block from its cached file, fetching the block when it is missing and again when it fails
     * its check. {@code fetched}: the caller already fetched it for this read (a miss).
     */
    private void readBlock(ObjectInfo info, Path entry, Path file, long block, long offset, MemorySegment into,
                           boolean fetched) {
        BlockHandle mapped = handles.get(file);
        if (mapped != null && mapped.acquire()) {
            // the hot path: a block mapped by this cache is read from its mapping without asking the file system
            try {
                mapped.copy(offset, into);
                used(file, mapped, into.byteSize(), fetched);
                return;
            } catch (CorruptBlock e) {
                discard(file, mapped);
            } finally {
                mapped.release();
            }
        }
        // fetched or mapped now: kept from eviction (by this cache's other readers and read-ahead) until copied
        hold(file);
        try {
            readBlockSlowly(info, entry, file, block, offset, into, fetched);
        } finally {
            unhold(file);
        }
    }

    /** Marks a block as used after a copy, counting a hit or a miss. */
    private void used(Path file, BlockHandle handle, long bytes, boolean fetched) {
        long inserted = insertions.get();
        if (handle.markedAt != inserted) {
            handle.markedAt = inserted;
            touch(file);
        }
        if (fetched) {
            misses.increment();
        } else {
            hits.increment();
            bytesFromCache.add(bytes);
        }
    }

    private void readBlockSlowly(ObjectInfo info, Path entry, Path file, long block, long offset, MemorySegment into,
                                 boolean fetched) {
        long expected = blockLength(info, block);
        // failed checks count as attempts; a block evicted or unmapped between its fetch and its read is no failure
        // of the block (another process evicted it, or this cache dropped the mapping) and is fetched or mapped again
        int raced = 0;
        List<String> failures = new ArrayList<>();
        for (int attempt = 0; attempt < 4; attempt++) {
            // a block mapped by this cache is read from its mapping without asking the file system again; its bytes
            // are still checked below (another process evicting the file leaves the mapped bytes intact)
            BlockHandle handle = handles.get(file);
            if (handle == null) {
                if (!Files.exists(file)) {
                    long start = System.nanoTime();
                    fetch(info, entry, block, file);
                    fetched = true;
                    waitedNanos.add(System.nanoTime() - start);
                }
                try {
                    handle = handle(file, expected);
                } catch (NoSuchFileException e) {
                    if (++raced < 100) {
                        attempt--;
                    } else {
                        failures.add("evicted before it could be read, 100 times");
                    }
                    continue;
                } catch (CorruptBlock e) {
                    failures.add(e.getMessage());
                    discard(file, null);
                    continue;
                }
            }
            if (!handle.acquire()) {
                // unmapped meanwhile (evicted, or least recently used): map it again, which is no failed attempt
                if (++raced < 100) {
                    attempt--;
                } else {
                    failures.add("unmapped before it could be read, 100 times");
                }
                continue;
            }
            try {
                handle.copy(offset, into);
            } catch (CorruptBlock e) {
                failures.add(e.getMessage());
                discard(file, handle);
                continue;
            } finally {
                handle.release();
            }
            used(file, handle, into.byteSize(), fetched);
            return;
        }
        throw new MemfitException(info.uri() + ": block " + block + " (bytes " + block * blockBytes + ".."
                + (block * blockBytes + expected) + ") could not be cached and read back intact in 4 attempts (cache "
                + folder + ": " + String.join("; ", failures) + "); check the disk, or raise the cache limit if other "
                + "processes evict it");
    }

    /** A cached block that failed its check. */
    private static final class CorruptBlock extends Exception {
        CorruptBlock(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * A mapped block file with its table of piece checksums. A copy checks the CRC32C of each piece it touches the
     * first time this mapping serves it, straight from the mapping (no copy into a buffer first), and copies checked
     * pieces afterwards without checking again: block files are never written in place (temporary name, then rename),
     * so a checked piece of a mapping stays as it was checked. Checking on every copy cost 2-3 times the copy itself
     * (a 32 KiB piece per 4 KiB row). A new mapping (another process, or after this cache dropped it) checks again.
     */
    private static final class BlockHandle {
        private final Arena arena;
        private final MemorySegment data;
        private final int[] crcs;
        /**
         * Readers copying from the mapping, plus one for the cache's own reference until {@link #retire}: the mapping
         * is unmapped (and an evicted file's disk space returned) when it drops to 0, never under a reader.
         */
        private final java.util.concurrent.atomic.AtomicInteger users = new java.util.concurrent.atomic.AtomicInteger(1);
        private final java.util.concurrent.atomic.AtomicBoolean retired = new java.util.concurrent.atomic.AtomicBoolean();
        /** Pieces whose CRC32C held; racy on purpose: a piece another thread just checked may be checked twice. */
        private final boolean[] checked;
        /** {@link #insertions} when this block was last marked as used; racy on purpose (a hint). */
        long markedAt = -1;
        /** {@link System#nanoTime()} of the last copy, for unmapping the least recently used; racy on purpose. */
        long lastUsed = System.nanoTime();

        BlockHandle(Arena arena, MemorySegment data, int[] crcs) {
            this.arena = arena;
            this.data = data;
            this.crcs = crcs;
            this.checked = new boolean[crcs.length];
        }

        /** Takes the mapping for one copy; false once it is unmapped or being unmapped. */
        boolean acquire() {
            for (int n = users.get(); n > 0; n = users.get()) {
                if (users.compareAndSet(n, n + 1)) {
                    return true;
                }
            }
            return false;
        }

        /** Ends a copy; the last one after {@link #retire} unmaps. */
        void release() {
            if (users.decrementAndGet() == 0) {
                arena.close();
            }
        }

        /** Drops the cache's reference: unmapped now, or when the last copy in progress ends. */
        void retire() {
            if (retired.compareAndSet(false, true)) {
                release();
            }
        }

        /** Copies {@code into.byteSize()} bytes from {@code offset}, checking every piece they touch not yet checked. */
        void copy(long offset, MemorySegment into) throws CorruptBlock {
            CRC32C crc = CRC.get();
            long end = offset + into.byteSize();
            long dataLength = data.byteSize();
            for (long p = offset / PIECE; p * PIECE < end; p++) {
                long pieceStart = p * PIECE;
                long pieceLength = Math.min(PIECE, dataLength - pieceStart);
                MemorySegment piece = data.asSlice(pieceStart, pieceLength);
                if (!checked[(int) p]) {
                    crc.reset();
                    crc.update(piece.asByteBuffer());
                    if ((int) crc.getValue() != crcs[(int) p]) {
                        throw new CorruptBlock("piece " + p + " fails its CRC32C");
                    }
                    checked[(int) p] = true;
                }
                long from = Math.max(offset, pieceStart);
                long to = Math.min(end, pieceStart + pieceLength);
                MemorySegment.copy(piece, from - pieceStart, into, from - offset, to - from);
            }
            lastUsed = System.nanoTime();
        }
    }

    private BlockHandle handle(Path file, long dataLength) throws NoSuchFileException, CorruptBlock {
        BlockHandle open = handles.get(file);
        if (open != null) {
            return open;
        }
        FileChannel channel;
        try {
            channel = FileChannel.open(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw e;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the cached block " + file, e);
        }
        try (channel) {
            int pieces = pieces(dataLength);
            long trailer = 4L * pieces + 12;
            if (channel.size() != dataLength + trailer) {
                throw new CorruptBlock("the block file has " + channel.size() + " bytes, expected " + (dataLength + trailer));
            }
            ByteBuffer table = ByteBuffer.allocate((int) trailer).order(ByteOrder.LITTLE_ENDIAN);
            while (table.hasRemaining()) {
                if (channel.read(table, dataLength + table.position()) < 0) {
                    throw new CorruptBlock("the block file ends early");
                }
            }
            table.flip();
            CRC32C crc = new CRC32C();
            crc.update(table.slice(0, 4 * pieces));
            bind(crc, file);
            if (table.getLong(4 * pieces + 4) != MAGIC || table.getInt(4 * pieces) != (int) crc.getValue()) {
                throw new CorruptBlock("the checksum table is damaged, of another block or of an earlier version");
            }
            int[] crcs = new int[pieces];
            table.asIntBuffer().get(crcs);
            // Block files are never written in place (temporary name, then rename): the mapping stays valid, also
            // after the file is evicted, and the channel can be closed at once. A shared arena, closed when the last
            // reader of a dropped mapping is done (BlockHandle.users): an evicted file's disk space returns then, not
            // when the garbage collector gets to it (a tight limit could otherwise fill the disk).
            Arena arena = Arena.ofShared();
            MemorySegment data = channel.map(FileChannel.MapMode.READ_ONLY, 0, dataLength, arena);
            BlockHandle handle = new BlockHandle(arena, data, crcs);
            BlockHandle previous = handles.putIfAbsent(file, handle);
            if (previous != null) {
                handle.retire();
                return previous; // another thread mapped it meanwhile
            }
            if (handles.size() > openBlocks) {
                unmapLeastRecentlyUsed();
            }
            return handle;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the cached block " + file, e);
        }
    }

    /** Drops the least recently used quarter of the mapped blocks (readers racing with it map them again). */
    private void unmapLeastRecentlyUsed() {
        synchronized (handles) {
            if (handles.size() <= openBlocks) {
                return;
            }
            record Use(Path file, BlockHandle handle, long lastUsed) {
            }
            List<Use> all = new ArrayList<>(handles.size());
            handles.forEach((file, handle) -> all.add(new Use(file, handle, handle.lastUsed)));
            all.sort(Comparator.comparingLong(Use::lastUsed));
            for (Use use : all.subList(0, Math.max(0, all.size() - openBlocks * 3 / 4))) {
                if (handles.remove(use.file(), use.handle())) {
                    use.handle().retire();
                }
            }
        }
    }

    /** Drops this cache's mapping of a block whose file is gone or bad. */
    private void unmap(Path file, BlockHandle handle) {
        BlockHandle open = handles.get(file);
        if (open != null && (handle == null || open == handle) && handles.remove(file, open)) {
            open.retire();
        }
    }

    /** Deletes a block that failed its check, so that the next attempt fetches it again. */
    private void discard(Path file, BlockHandle handle) {
        corruptBlocks.increment();
        unmap(file, handle);
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove the corrupt cached block " + file, e);
        }
    }

    /**
     * Downloads one block into the cache, unless another thread of this cache is already doing so (then waits for
     * it) or has just done so.
     */
    private void fetch(ObjectInfo info, Path entry, long block, Path file) {
        CompletableFuture<Void> mine = new CompletableFuture<>();
        CompletableFuture<Void> running = inFlight.putIfAbsent(file, mine);
        if (running != null) {
            try {
                running.join();
            } catch (java.util.concurrent.CompletionException e) {
                throw rethrow(e.getCause());
            }
            return;
        }
        run(mine, info, entry, block, file);
    }

    /**
     * Downloads a block unless it is there now, completing {@code mine} (registered in {@link #inFlight}). The
     * download holds the block's lock in the folder ({@link FetchLocks}): a block another process or cache is
     * downloading is waited for, then found in place, not downloaded again.
     */
    private void run(CompletableFuture<Void> mine, ObjectInfo info, Path entry, long block, Path file) {
        try {
            if (!Files.exists(file)) {
                try (FetchLocks.Held ignored = fetchLocks.lock(file)) {
                    if (!Files.exists(file)) {
                        download(info, entry, block, file);
                    }
                }
            }
            mine.complete(null);
        } catch (RuntimeException | Error e) {
            mine.completeExceptionally(e);
            throw e;
        } finally {
            inFlight.remove(file, mine);
        }
    }

    /** Keeps a file from eviction by the caches of this JVM (counted; {@link #unhold} undoes one). */
    private void hold(Path file) {
        HELD.merge(file, 1, Integer::sum);
    }

    private void unhold(Path file) {
        if (HELD.computeIfPresent(file, (k, count) -> count == 1 ? null : count - 1) == null) {
            trimIfOverLimit();
        }
    }

    /** The read-ahead window's hold on blocks and its fetches, in the background. */
    private final class WindowBlocks implements ReadAhead.Blocks<Resolved> {
        @Override
        public void protect(Path file) {
            hold(file);
        }

        @Override
        public void release(Path file) {
            unhold(file);
        }

        @Override
        public boolean fetch(Resolved object, long block, Path file, Runnable done) {
            if (handles.containsKey(file) || inFlight.containsKey(file) || Files.exists(file)) {
                return false;
            }
            // registered before the task starts, so that a reader of the block finds it in flight and waits for it
            CompletableFuture<Void> mine = new CompletableFuture<>();
            if (inFlight.putIfAbsent(file, mine) != null) {
                return false;
            }
            try {
                fetchers.submit(() -> {
                    try {
                        run(mine, object.info, object.entry, block, file);
                    } catch (RuntimeException e) {
                        // left to the read that needs the block: it fetches again and reports the failure
                    } finally {
                        done.run();
                    }
                });
                return true;
            } catch (java.util.concurrent.RejectedExecutionException e) {
                inFlight.remove(file, mine);
                mine.completeExceptionally(new MemfitException("the cache " + folder + " is closed"));
                return false;
            }
        }
    }

    private void download(ObjectInfo info, Path entry, long block, Path file) {
        long length = blockLength(info, block);
        int pieces = pieces(length);
        acquireFetchSlot(info);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bytes = arena.allocate(length);
            store.read(info.uri(), info.etag(), block * blockBytes, bytes);
            ByteBuffer trailer = ByteBuffer.allocate(4 * pieces + 12).order(ByteOrder.LITTLE_ENDIAN);
            CRC32C crc = new CRC32C();
            for (int p = 0; p < pieces; p++) {
                long start = (long) p * PIECE;
                crc.reset();
                crc.update(bytes.asSlice(start, Math.min(PIECE, length - start)).asByteBuffer());
                trailer.putInt((int) crc.getValue());
            }
            crc.reset();
            crc.update(trailer.array(), 0, 4 * pieces);
            bind(crc, file);
            trailer.putInt((int) crc.getValue()).putLong(MAGIC).flip();
            Files.createDirectories(entry);
            describeEntry(info, entry);
            Path temporary = TempFiles.beside(file);
            try {
                try (FileChannel out = FileChannel.open(temporary, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                    ByteBuffer data = bytes.asByteBuffer();
                    while (data.hasRemaining()) {
                        out.write(data);
                    }
                    while (trailer.hasRemaining()) {
                        out.write(trailer);
                    }
                }
                insert(temporary, file, length + 4L * pieces + 12);
            } finally {
                Files.deleteIfExists(temporary);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write a block of " + info.uri() + " into the cache " + folder, e);
        } finally {
            // held until the block is in place: it also bounds the blocks held in memory and in temporary files
            fetchSlots.release();
        }
    }

    /** Takes one of the {@code optParallelRequests} slots every request to the store holds while it runs. */
    private void acquireFetchSlot(ObjectInfo info) {
        try {
            fetchSlots.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MemfitException("interrupted while waiting to read " + info.uri(), e);
        }
    }

    /** Writes the entry's description (what object and version it holds) once, for people and {@code cache ls}. */
    private static void describeEntry(ObjectInfo info, Path entry) throws IOException {
        Path note = entry.resolve("object.txt");
        if (Files.exists(note)) {
            return;
        }
        Path temporary = TempFiles.beside(note);
        Files.writeString(temporary, "uri=" + info.uri() + "\netag=" + info.etag() + "\nsize=" + info.size() + "\n",
                StandardCharsets.UTF_8);
        AtomicMove.replace(temporary, note);
    }

    /**
     * Moves a finished file into the cache under the folder lock, first removing least recently used files until it
     * fits under the limit.
     */
    private void insert(Path temporary, Path target, long bytes) throws IOException {
        insert(temporary, target, bytes, false);
    }

    /**
     * As {@link #insert(Path, Path, long)}; with {@code replace}, a file already at the target is replaced rather
     * than kept: a staged copy is put in place only after its blocks were checked, and one found there without a note
     * that vouches for it (torn by a crash, truncated, left by an older run) is not those bytes.
     */
    private void insert(Path temporary, Path target, long bytes, boolean replace) throws IOException {
        if (bytes > limitBytes) {
            throw new MemfitException("the cache " + folder + " is limited to " + limitBytes + " bytes, less than the "
                    + bytes + " bytes of " + target.getFileName() + "; raise BlockCache.builder().optLimitBytes");
        }
        withFolderLock(() -> {
            if (!replace && Files.exists(target)) {
                return; // another process cached the same bytes meanwhile
            }
            evictFor(bytes, target);
            AtomicMove.replace(temporary, target);
            Files.setLastModifiedTime(target, FileTime.from(Instant.now()));
            insertions.incrementAndGet();
        });
    }

    interface Locked {
        void run() throws IOException;
    }

    private void withFolderLock(Locked work) throws IOException {
        withFolderLock(folder, work);
    }

    /**
     * Runs work under the exclusive lock of a cache folder: this JVM's lock for the folder, then the file lock on
     * {@code FOLDER/.lock} that other processes take.
     */
    static void withFolderLock(Path folder, Locked work) throws IOException {
        ReentrantLock inProcess = FOLDER_LOCKS.computeIfAbsent(folder, f -> new ReentrantLock());
        inProcess.lock();
        try (FileChannel channel = FileChannel.open(folder.resolve(".lock"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE);
             FileLock ignored = channel.lock()) {
            work.run();
        } finally {
            inProcess.unlock();
        }
    }

    /** A cached file, as eviction sees it. */
    private record Cached(Path file, long bytes, long lastUsed) {
    }

    /** Removes least recently used cached files until {@code bytes} more fit under the limit (folder lock held). */
    private void evictFor(long bytes, Path incoming) throws IOException {
        List<Cached> files = cachedFiles(true);
        long total = 0;
        for (Cached file : files) {
            total += file.bytes();
        }
        if (total + bytes <= limitBytes) {
            overLimit = false;
            return;
        }
        files.sort(Comparator.comparingLong(Cached::lastUsed));
        for (Cached file : files) {
            if (total + bytes <= limitBytes) {
                break;
            }
            if (file.file().equals(incoming) || HELD.containsKey(file.file())) {
                continue; // in use: pinned files may hold the folder above its limit until they are released
            }
            if (Files.deleteIfExists(file.file())) {
                evictedBlocks.increment();
            }
            // dropped from this cache (a later read fetches it again); unmapped as soon as no read is copying from
            // it, which returns the deleted file's disk space
            unmap(file.file(), null);
            total -= file.bytes();
        }
        // held files kept the folder above its limit: the release of a hold trims it again (trimIfOverLimit)
        overLimit = total + bytes > limitBytes;
    }

    /**
     * Brings the folder back under its limit after an insertion left it above because of held files, once a hold is
     * released: the limit is exceeded only while files are held, never left exceeded after a pass.
     */
    private void trimIfOverLimit() {
        if (!overLimit || closed.get()) {
            return;
        }
        try {
            withFolderLock(() -> evictFor(0, null));
        } catch (IOException | UncheckedIOException e) {
            // the next insertion evicts what it needs
        }
    }

    /**
     * Every finished block and staged object in the folder, with its size and last use. With {@code clean}, the
     * temporary files of processes that died mid-download are deleted on the way.
     */
    private List<Cached> cachedFiles(boolean clean) throws IOException {
        List<Cached> files = new ArrayList<>();
        try (Stream<Path> all = Files.find(folder, 3, (path, attributes) -> attributes.isRegularFile())) {
            for (Path file : (Iterable<Path>) all::iterator) {
                String name = file.getFileName().toString();
                if (clean && TempFiles.isTemporary(name) && TempFiles.isStale(name)) {
                    Files.deleteIfExists(file);
                    continue;
                }
                if (!isCachedName(name)) {
                    continue;
                }
                try {
                    BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
                    files.add(new Cached(file, attributes.size(), attributes.lastModifiedTime().to(java.util.concurrent.TimeUnit.MICROSECONDS)));
                } catch (NoSuchFileException ignored) {
                    // removed meanwhile by a reader that found it corrupt
                }
            }
        } catch (UncheckedIOException e) {
            if (!(e.getCause() instanceof NoSuchFileException)) {
                throw e;
            }
        }
        return files;
    }

    static boolean isCachedName(String name) {
        return (name.endsWith(BLOCK_SUFFIX) || name.equals(STAGED)) && !TempFiles.isTemporary(name);
    }

    /**
     * Marks a cached file as just used, for least-recently-used eviction across processes; a block found evicted (by
     * another process) is unmapped, which returns its disk space.
     */
    private void touch(Path file) {
        try {
            Files.setLastModifiedTime(file, FileTime.from(Instant.now()));
        } catch (NoSuchFileException evicted) {
            unmap(file, null);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot mark " + file + " as used", e);
        }
    }



    /**
     * Protects a cached file (such as a {@link #stage staged} object being read) from eviction by this cache (and the
     * other caches of this JVM) until the returned handle is closed, so that staging further objects under a small limit never removes the ones in
     * use. Pins count: a file pinned twice stays protected until both handles are closed. Pinned files may keep the
     * folder above its limit.
     *
     * @param file a file of this cache, such as {@link StagedObject#file()}
     * @return the pin; closing it (once) lets the file be evicted again
     */
    public Pin pin(Path file) {
        Path key = file.toAbsolutePath().normalize();
        hold(key);
        java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();
        return () -> {
            if (released.compareAndSet(false, true)) {
                unhold(key);
            }
        };
    }

    /** The MD5 of a file's bytes, in hex. */
    static String md5Hex(Path file) throws IOException {
        MessageDigest md5;
        try {
            md5 = MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no MD5", e);
        }
        try (java.io.InputStream in = Files.newInputStream(file)) {
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; ) {
                md5.update(buffer, 0, n);
            }
        }
        return HexFormat.of().formatHex(md5.digest());
    }

    /**
     * Removes a staged copy that a caller found damaged (its bytes fail a check the caller knows, such as a CRC a
     * shard folder's metadata records), so that the next {@link #stage} builds it again from its blocks (each checked
     * against its CRC32C, fetched again where damaged). The blocks themselves are kept.
     *
     * @param staged what {@link #stage} returned
     */
    public void discardStaged(StagedObject staged) {
        Path note = staged.file().resolveSibling(STAGED_NOTE);
        try {
            withFolderLock(() -> {
                Files.deleteIfExists(note); // first: a note must never stand for a missing or damaged copy
                Files.deleteIfExists(staged.file());
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove the damaged staged copy " + staged.file(), e);
        }
        corruptBlocks.increment();
    }

    /**
     * Makes a whole object available as a local file: its blocks are fetched (in parallel, those already cached
     * reused after their check), joined into one file whose MD5 is compared with the ETag where the ETag is an MD5,
     * and renamed into the cache. A mismatch fetches every block again once, then fails.
     *
     * @param uri the object
     * @return the local copy and how it was checked
     */
    public StagedObject stage(ObjectUri uri) {
        ObjectInfo info = open(uri);
        if (info.size() > limitBytes) {
            // refused before any download: fetching its blocks first would evict everything else for nothing
            throw new MemfitException(uri + " (" + info.size() + " bytes) cannot be staged in the cache " + folder
                    + ", limited to " + limitBytes + " bytes; raise the limit (MEMFIT_CACHE_LIMIT, "
                    + "BlockCache.builder().optLimitBytes) or read it in blocks (Datasets.npy(uri).lazy(threads))");
        }
        Path entry = entry(info);
        Path staged = entry.resolve(STAGED);
        Path note = entry.resolve(STAGED_NOTE);
        try {
            if (Files.exists(note) && Files.exists(staged) && Files.size(staged) == info.size()) {
                // checked before it is handed out: its readers (jhdf, a mapping) read it without any block check, and
                // a damaged copy is fetched again rather than read
                String problem = checkStaged(staged, Files.readString(note), info);
                if (problem == null) {
                    touch(staged);
                    hits.increment();
                    bytesFromCache.add(info.size());
                    return new StagedObject(staged, info, Files.readString(note).startsWith("md5"));
                }
                discardStaged(new StagedObject(staged, info, true));
            }
        } catch (NoSuchFileException e) {
            // evicted between the checks: stage it again
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + note, e);
        }
        long blocks = Math.max(1, (info.size() + blockBytes - 1) / blockBytes);
        Resolved object = new Resolved(info, entry);
        for (int attempt = 0; ; attempt++) {
            Set<Long> fetched = new HashSet<>();
            for (long block = 0; block < blocks && info.size() > 0; block++) {
                Path file = object.blockFile(block);
                if (!handles.containsKey(file) && !Files.exists(file)) {
                    fetched.add(block);
                }
            }
            // the blocks are fetched ahead, in parallel, within the read-ahead window while they are joined in order
            List<ReadAhead.Entry<Resolved>> own = info.size() > 0 ? announce(object, 0, blocks - 1, true) : List.of();
            String md5;
            try {
                md5 = assemble(info, entry, staged, note, blocks, fetched);
            } finally {
                readAhead.withdraw(own);
            }
            if (md5 == null) {
                return new StagedObject(staged, info, info.etagIsMd5());
            }
            try {
                // every block again: unmapped too, or the next attempt would copy the same bytes from the old mappings
                for (long block = 0; block < blocks; block++) {
                    Path file = blockFile(entry, block);
                    Files.deleteIfExists(file);
                    unmap(file, null);
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot remove the mismatching copy of " + uri + " from " + folder, e);
            }
            if (attempt == 1) {
                throw new MemfitException(uri + ": the downloaded bytes do not match the ETag (MD5 " + md5 + ", ETag "
                        + info.etag() + ") in two downloads; the server or the network corrupts data");
            }
        }
    }

    /**
     * Why a staged copy found in the folder must not be used, or null when it is intact: checked against the CRC32C of
     * each of its pieces recorded when it was staged; a copy staged by an older memfit (no checksums in its note)
     * against the ETag's MD5, or staged again when its ETag is not an MD5.
     */
    private static String checkStaged(Path staged, String note, ObjectInfo info) throws IOException {
        String problem = StagedChecksums.check(staged, note, false);
        if (problem == null || !problem.isEmpty()) {
            return problem;
        }
        if (note.startsWith("md5") && info.etagIsMd5()) {
            String found = md5Hex(staged);
            return found.equalsIgnoreCase(info.etag()) ? null : "MD5 " + found + ", the ETag says " + info.etag();
        }
        return "its note holds no checksums to check it with";
    }

    /**
     * Joins the verified blocks into a temporary file and checks its MD5 against the ETag (where the ETag is an MD5).
     * Only a copy that passes is renamed into place, and its note written after it, so a note always stands for a
     * finished, checked copy (another reader, or a crash, never finds an unchecked one marked as checked).
     *
     * @return null when staged; else the MD5 (hex) of bytes that do not match the ETag, nothing put in place
     */
    private String assemble(ObjectInfo info, Path entry, Path staged, Path note, long blocks, Set<Long> fetched) {
        MessageDigest md5;
        try {
            md5 = MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no MD5", e);
        }
        Path temporary = TempFiles.beside(staged);
        try (Arena arena = Arena.ofConfined()) {
            Files.createDirectories(entry); // before its first block, which may still be on its way
            MemorySegment buffer = arena.allocate(Math.min(blockBytes, Math.max(1, info.size())));
            StagedChecksums checksums = new StagedChecksums();
            try (FileChannel out = FileChannel.open(temporary, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                for (long block = 0; block < blocks && info.size() > 0; block++) {
                    MemorySegment part = buffer.asSlice(0, blockLength(info, block));
                    Path file = blockFile(entry, block);
                    readBlock(info, entry, file, block, 0, part, fetched.contains(block));
                    readAhead.consume(file);
                    md5.update(part.asByteBuffer());
                    checksums.update(part.asByteBuffer());
                    ByteBuffer data = part.asByteBuffer();
                    while (data.hasRemaining()) {
                        out.write(data);
                    }
                }
            }
            String hex = HexFormat.of().formatHex(md5.digest());
            if (info.etagIsMd5() && !hex.equalsIgnoreCase(info.etag())) {
                return hex;
            }
            Files.deleteIfExists(note); // a note of an earlier copy (evicted since) must not vouch for this one early
            insert(temporary, staged, info.size(), true);
            Path noteTemporary = TempFiles.beside(note);
            Files.writeString(noteTemporary, (info.etagIsMd5() ? "md5 " + hex + " matches the ETag\n"
                    : "ETag " + info.etag() + " (multipart) not checked; blocks checked with CRC32C\n")
                    + checksums.line() + "\n");
            AtomicMove.replace(noteTemporary, note);
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot stage " + info.uri() + " in " + folder, e);
        } finally {
            try {
                Files.deleteIfExists(temporary);
            } catch (IOException ignored) {
                // a leftover temporary file is removed by TempFiles.removeStale later
            }
        }
    }

    /**
     * The counters since this cache was created.
     *
     * @return a snapshot
     */
    public CacheStatistics statistics() {
        return new CacheStatistics(hits.sum(), misses.sum(), store.bytesDownloaded(), bytesFromCache.sum(),
                waitedNanos.sum() / 1e9, store.requests(), store.retries(), corruptBlocks.sum(), evictedBlocks.sum());
    }

    /**
     * The bytes of finished blocks and staged objects now in the cache folder (all processes' together).
     *
     * @return bytes, at most the limit
     */
    public long usedBytes() {
        try {
            return cachedFiles(false).stream().mapToLong(Cached::bytes).sum();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the cache " + folder, e);
        }
    }

    /**
     * The cache folder.
     *
     * @return its absolute path
     */
    public Path folder() {
        return folder;
    }

    /**
     * The block size.
     *
     * @return bytes per block
     */
    public int blockBytes() {
        return blockBytes;
    }

    /** The folder of one version of one object: a hash of endpoint, bucket, key, ETag and block size. */
    Path entry(ObjectInfo info) {
        Path known = entries.get(info);
        return known != null ? known : entries.computeIfAbsent(info, this::entryOf);
    }

    private Path entryOf(ObjectInfo info) {
        String identity = store.endpointOf(info.uri()) + "\n" + info.uri().bucket() + "\n" + info.uri().key() + "\n"
                + info.etag() + "\n" + blockBytes;
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(identity.getBytes(StandardCharsets.UTF_8));
            String hex = HexFormat.of().formatHex(hash, 0, 16);
            return folder.resolve(hex.substring(0, 2)).resolve(hex);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    /**
     * The file a cached block of an object is kept in (it may not exist), for tools and tests.
     *
     * @param uri the object (its pinned version)
     * @param block the block's index
     * @return the block file
     */
    public Path blockFile(ObjectUri uri, long block) {
        return blockFile(entry(open(uri)), block);
    }

    private static Path blockFile(Path entry, long block) {
        return entry.resolve(block + BLOCK_SUFFIX);
    }

    private long blockLength(ObjectInfo info, long block) {
        return Math.min(blockBytes, info.size() - block * blockBytes);
    }

    static int pieces(long length) {
        return (int) ((length + PIECE - 1) / PIECE);
    }

    private static RuntimeException rethrow(Throwable cause) {
        if (cause instanceof RuntimeException runtime) {
            return runtime;
        }
        if (cause instanceof Error error) {
            throw error;
        }
        return new MemfitException(String.valueOf(cause.getMessage()), cause);
    }

    // Storage: paths are objects in their path form (ObjectUri.toPath()).

    /**
     * Reads part of an object named by its path form ({@code s3:/bucket/key}).
     *
     * @param file the object as a path
     * @param position the first byte
     * @param into where the bytes go
     */
    @Override
    public void read(Path file, long position, MemorySegment into) {
        if (into.byteSize() == 0) {
            return;
        }
        read(resolve(file), position, into);
    }

    /**
     * Announces a read: its blocks join the read-ahead window in the order announced, where they are kept from
     * eviction until read and fetched in the background when missing (within the limit on parallel requests), so that
     * the blocks of a whole batch download in parallel while its records are read one by one. Each read of a block
     * ends one announcement of it (loaders announce each run of a batch, then read it). The window holds as many
     * blocks as the limit does besides the one being read; announcements beyond it wait for their turn, and a cache
     * of one block fetches nothing ahead. Failures are left to the read that needs the block.
     *
     * @param file the object as a path
     * @param position the first byte
     * @param length the bytes
     */
    @Override
    public void willRead(Path file, long position, long length) {
        if (length <= 0) {
            return;
        }
        Resolved object;
        try {
            object = resolve(file);
        } catch (RuntimeException e) {
            return; // the read reports it
        }
        long end = Math.min(position + length, object.info.size());
        long first = Math.max(0, position / blockBytes);
        if (first == 0 && end > 0) {
            object.headAnnounced = true;
        }
        announce(object, first, (end - 1) / blockBytes, false);
    }

    /**
     * Announces reads of blocks {@code first..last} to the read-ahead window, mapped blocks included. (Leaving out
     * blocks mapped while the cache had not evicted lately let the window fetch the next block ahead while a mapped one
     * still to be read was unprotected: the insertion that made the cache evict again then evicted that block, which
     * its read downloaded a second time.)
     */
    private List<ReadAhead.Entry<Resolved>> announce(Resolved object, long first, long last, boolean onlyWhereNone) {
        return readAhead.announce(object, first, last, object::blockFile, onlyWhereNone);
    }

    /**
     * Whether an object named by its path form exists (a HEAD request, whose answer is kept as {@link #open} keeps
     * it); a zarr store in a bucket leaves out chunks that hold only the fill value.
     *
     * @param file the object as a path
     * @return false when the bucket has no such key
     * @throws MemfitException when the bucket does not exist or the server cannot be asked
     */
    @Override
    public boolean exists(Path file) {
        try {
            open(ObjectUri.of(file));
            return true;
        } catch (ObjectStore.NoSuchObject e) {
            return false;
        }
    }

    /**
     * The size of an object named by its path form.
     *
     * @param file the object as a path
     * @return bytes
     */
    @Override
    public long size(Path file) {
        return open(ObjectUri.of(file)).size();
    }

    @Override
    public String describe() {
        return "object cache (" + (blockBytes >> 10) + " KiB blocks, limit " + (limitBytes >> 20) + " MiB, "
                + (readAhead.windowBlocks() > 0 ? "read-ahead up to " + readAhead.windowBlocks() + " blocks"
                : "no read-ahead: the limit holds one block") + ") over " + store.describe();
    }

    /** Closes the open block files, the fetch threads and the store. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        fetchers.shutdownNow();
        // downloads in flight stop at their next interruptible step; waiting for them keeps a late insertion from
        // writing into the folder after close returns, and the store from closing under them
        try {
            if (!fetchers.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS)) {
                System.err.println("memfit: downloads into the cache " + folder + " still running 30 s after close");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        readAhead.clear();
        for (Path file : List.copyOf(handles.keySet())) {
            unmap(file, null);
        }
        fetchLocks.close();
        store.close();
    }
}
