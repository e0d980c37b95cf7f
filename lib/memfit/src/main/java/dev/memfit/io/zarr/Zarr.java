package dev.memfit.io.zarr;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.io.storage.Storage;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A zarr v2 store opened for reading: a {@code .zarr} folder or a {@code .zarr.zip} archive, local or through any
 * {@link Storage} (an object cache reads a bucket). It finds groups and arrays by path ({@code X/data},
 * {@code obs/cell_type/codes}), reads their attributes, and opens {@link ZarrArray}s, whose decoded chunks share one
 * cache bounded in bytes. With consolidated metadata ({@code .zmetadata}) every {@code .zgroup}, {@code .zarray} and
 * {@code .zattrs} comes from it, so a remote store costs one request for all of them. Thread-safe.
 *
 * <pre>{@code
 * try (Zarr zarr = Zarr.open(Path.of("atlas.zarr"))) {
 *     String encoding = zarr.attributes("X").encodingType().orElse("array");   // "csr_matrix"
 *     long[] shape = zarr.attributes("X").longs("shape").orElseThrow();
 *     String[] cells = zarr.array("obs/_index").toStringArray();
 * }
 * }</pre>
 */
public final class Zarr implements AutoCloseable {

    /** The default bound of the chunk cache: 64 MiB of decoded chunks per store. */
    public static final long DEFAULT_CACHE_BYTES = 64L << 20;

    static final JsonMapper JSON = JsonMapper.builder().enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS).build();

    private final ZarrStore store;
    private final Path location;
    private final ChunkCache cache;
    /** The consolidated metadata by key, or null when the store has none. */
    private final Map<String, JsonNode> consolidated;
    private final Map<String, ZarrArray> arrays = new ConcurrentHashMap<>();
    private final AtomicInteger arrayIds = new AtomicInteger();

    private Zarr(ZarrStore store, Path location, long cacheBytes) {
        this.store = store;
        this.location = location;
        this.cache = new ChunkCache(cacheBytes);
        try {
            byte[] zmetadata = store.get(".zmetadata");
            Map<String, JsonNode> metadata = null;
            if (zmetadata != null) {
                JsonNode root = parse(zmetadata, ".zmetadata");
                JsonNode entries = root.get("metadata");
                if (entries == null || !entries.isObject()) {
                    throw new InvalidFileException(store.location(".zmetadata"), -1, "consolidated metadata with a "
                            + "\"metadata\" object", root.toString().substring(0, Math.min(200, root.toString().length())));
                }
                metadata = new HashMap<>();
                for (Iterator<Map.Entry<String, JsonNode>> it = entries.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> entry = it.next();
                    metadata.put(entry.getKey(), entry.getValue());
                }
            }
            this.consolidated = metadata;
            if (!contains(".zgroup") && !contains(".zarray")) {
                boolean v3 = store.contains("zarr.json");
                throw new InvalidFileException(location, -1, "a zarr v2 store (.zgroup or .zarray at its root)",
                        v3 ? "a zarr v3 store (zarr.json), which memfit does not read" : "neither");
            }
            if (contains(".zgroup")) {
                JsonNode group = metadata(".zgroup");
                if (group.path("zarr_format").asInt(-1) != 2) {
                    throw new InvalidFileException(store.location(".zgroup"), -1, "zarr_format 2",
                            String.valueOf(group.get("zarr_format")));
                }
            }
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
    }

    /**
     * Opens a local store: a {@code .zarr} folder, or a zip archive when the name ends with {@code .zip}.
     *
     * @param path the folder or the archive
     * @return the store, to be closed
     * @throws InvalidFileException when it is not a zarr v2 store
     */
    public static Zarr open(Path path) {
        return open(Storage.local(), path, DEFAULT_CACHE_BYTES, true);
    }

    /**
     * Opens a store read through a storage (which the caller keeps and closes): a folder, or a zip archive when the
     * name ends with {@code .zip}; an object cache's path form ({@code s3:/bucket/atlas.zarr}) reads a bucket prefix.
     * Listing a group's children ({@link #children}) needs a local folder, an archive, or consolidated metadata.
     *
     * @param storage where the bytes come from
     * @param path the folder or the archive in the storage's terms
     * @return the store, to be closed
     * @throws InvalidFileException when it is not a zarr v2 store
     */
    public static Zarr open(Storage storage, Path path) {
        return open(storage, path, DEFAULT_CACHE_BYTES);
    }

    /**
     * Opens a store read through a storage (which the caller keeps and closes), with a chunk cache of a given bound.
     *
     * @param storage where the bytes come from
     * @param path the folder or the archive in the storage's terms
     * @param cacheBytes the most decoded chunk bytes kept (a chunk larger than this is decoded for each read)
     * @return the store, to be closed
     * @throws InvalidFileException when it is not a zarr v2 store
     */
    public static Zarr open(Storage storage, Path path, long cacheBytes) {
        return open(storage, path, cacheBytes, false);
    }

    static Zarr open(Storage storage, Path path, long cacheBytes, boolean ownsStorage) {
        if (cacheBytes < 0) {
            throw new MemfitException("Zarr.open: the chunk cache bound must be >= 0 bytes, got " + cacheBytes);
        }
        ZarrStore store;
        try {
            String name = path.getFileName() == null ? "" : path.getFileName().toString();
            store = name.toLowerCase(java.util.Locale.ROOT).endsWith(".zip")
                    ? new ZipStore(storage, path, ownsStorage) : new FolderStore(storage, path, ownsStorage);
        } catch (RuntimeException e) {
            if (ownsStorage) {
                storage.close();
            }
            throw e;
        }
        return new Zarr(store, path, cacheBytes);
    }

    /**
     * Whether a path names an array.
     *
     * @param path such as {@code X/data}; "" is the root
     * @return true when it has a {@code .zarray}
     */
    public boolean isArray(String path) {
        return contains(key(path, ".zarray"));
    }

    /**
     * Whether a path names a group.
     *
     * @param path such as {@code obs}; "" is the root
     * @return true when it has a {@code .zgroup}
     */
    public boolean isGroup(String path) {
        return contains(key(path, ".zgroup"));
    }

    /**
     * The attributes of a group or an array ({@code .zattrs}).
     *
     * @param path the node; "" is the root
     * @return the attributes, empty when it has none
     * @throws InvalidFileException when {@code .zattrs} is not a JSON object
     */
    public ZarrAttributes attributes(String path) {
        String key = key(path, ".zattrs");
        if (!contains(key)) {
            return ZarrAttributes.empty();
        }
        JsonNode json = metadata(key);
        if (!(json instanceof ObjectNode object)) {
            throw new InvalidFileException(store.location(key), -1, "a JSON object", json.getNodeType().toString());
        }
        return new ZarrAttributes(object);
    }

    /**
     * The arrays and groups directly in a group, by name, sorted.
     *
     * @param path the group; "" is the root
     * @return the names (not paths)
     * @throws MemfitException when the store cannot be listed: a folder read through a storage without listings and
     *         without consolidated metadata
     */
    public List<String> children(String path) {
        String group = normalize(path);
        if (!isGroup(group)) {
            throw new MemfitException(store.location(group) + ": not a zarr group (no .zgroup)");
        }
        TreeSet<String> names = new TreeSet<>();
        if (consolidated != null) {
            String prefix = group.isEmpty() ? "" : group + "/";
            for (String key : consolidated.keySet()) {
                if (key.startsWith(prefix)) {
                    String rest = key.substring(prefix.length());
                    int slash = rest.indexOf('/');
                    if (slash > 0 && (rest.endsWith("/.zarray") || rest.endsWith("/.zgroup"))
                            && isChildName(rest.substring(0, slash))) {
                        names.add(rest.substring(0, slash));
                    }
                }
            }
            return new ArrayList<>(names);
        }
        List<String> listed = store.list(group);
        if (listed == null) {
            throw new MemfitException(store.location(group) + ": cannot list this group through " + store
                    + ": the storage has no listings and the store no consolidated metadata (.zmetadata); open arrays by "
                    + "path, or consolidate it with zarr.consolidate_metadata");
        }
        for (String name : listed) {
            if (!name.startsWith(".") && isChildName(name)) {
                String child = group.isEmpty() ? name : group + "/" + name;
                if (isArray(child) || isGroup(child)) {
                    names.add(name);
                }
            }
        }
        return new ArrayList<>(names);
    }

    /**
     * Opens an array (once per path: later calls return the same object).
     *
     * @param path such as {@code X/data}
     * @return the array
     * @throws MemfitException when there is no array at that path
     * @throws InvalidFileException when its {@code .zarray} names a type, compressor or filter memfit does not read
     */
    public ZarrArray array(String path) {
        String name = normalize(path);
        ZarrArray open = arrays.get(name);
        if (open != null) {
            return open;
        }
        return arrays.computeIfAbsent(name, n -> {
            String key = key(n, ".zarray");
            if (!contains(key)) {
                throw new MemfitException(store.location(n) + ": no zarr array there (no .zarray)"
                        + (isGroup(n) ? "; it is a group" : ""));
            }
            return new ZarrArray(this, n, arrayIds.getAndIncrement(), metadata(key), attributes(n));
        });
    }

    /**
     * The store's location as it was opened.
     *
     * @return the folder or the archive
     */
    public Path location() {
        return location;
    }

    /**
     * Chunks decoded so far: into the cache (once, whichever thread asked first), or for one read that took them
     * whole.
     *
     * @return the count
     */
    public long decodedChunks() {
        return cache.decodes();
    }

    /**
     * Chunk reads served by the cache (or by waiting for another thread's decoding).
     *
     * @return the count
     */
    public long cacheHits() {
        return cache.hits();
    }

    /**
     * Decoded chunk bytes held by the cache now.
     *
     * @return bytes, at most the bound given at open
     */
    public long cachedBytes() {
        return cache.usedBytes();
    }

    /**
     * The bytes the store takes on its storage: a local folder's files, or an archive's size.
     *
     * @return bytes, or -1 for a folder in a bucket (its keys are not listed)
     */
    public long bytes() {
        return store.bytes();
    }

    @Override
    public String toString() {
        return "zarr " + store;
    }

    /** Closes the storage when the store opened it itself ({@link #open(Path)}). */
    @Override
    public void close() {
        store.close();
    }

    // ---- for arrays

    /** Where a key lives, for messages: the file, or the archive and its entry. */
    Path location(String key) {
        return store.location(normalize(key));
    }

    ZarrStore store() {
        return store;
    }

    ChunkCache cache() {
        return cache;
    }

    private boolean contains(String key) {
        if (consolidated != null && isMetadataKey(key)) {
            return consolidated.containsKey(key);
        }
        return store.contains(key);
    }

    private JsonNode metadata(String key) {
        if (consolidated != null && isMetadataKey(key)) {
            JsonNode node = consolidated.get(key);
            if (node == null) {
                throw new MemfitException(store.location(key) + ": not in the consolidated metadata");
            }
            return node;
        }
        byte[] bytes = store.get(key);
        if (bytes == null) {
            throw new MemfitException(store.location(key) + ": no such key");
        }
        return parse(bytes, key);
    }

    private JsonNode parse(byte[] bytes, String key) {
        try {
            return JSON.readTree(new String(bytes, StandardCharsets.UTF_8));
        } catch (JsonProcessingException e) {
            throw new InvalidFileException(store.location(key), -1, "JSON", e.getOriginalMessage(), e);
        }
    }

    /**
     * Whether a listed name names a child of its own: a valid key that {@link #normalize} leaves as it is (a name of
     * blanks would otherwise be its parent again, and one with surrounding blanks another child).
     */
    private static boolean isChildName(String name) {
        return ZarrStore.isValidKey(name) && name.equals(name.strip());
    }

    private static boolean isMetadataKey(String key) {
        return key.endsWith(".zarray") || key.endsWith(".zgroup") || key.endsWith(".zattrs");
    }

    private static String normalize(String path) {
        String p = path == null ? "" : path.strip();
        while (p.startsWith("/")) {
            p = p.substring(1);
        }
        while (p.endsWith("/")) {
            p = p.substring(0, p.length() - 1);
        }
        return p;
    }

    private static String key(String path, String name) {
        String p = normalize(path);
        return p.isEmpty() ? name : p + "/" + name;
    }
}
