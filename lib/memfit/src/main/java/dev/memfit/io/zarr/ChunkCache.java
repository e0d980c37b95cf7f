package dev.memfit.io.zarr;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * Decoded chunks of the arrays of one store, least recently used dropped first once their bytes pass a bound.
 * Thread-safe: a chunk wanted by several threads at once is decoded once and the others wait for it.
 */
final class ChunkCache {

    /** A chunk of one array: the array's number in its store and the chunk's number in the array's grid. */
    record Key(int array, long chunk) {
    }

    /** A decoded chunk (a {@code byte[]} of numbers or a {@code String[]}) and what it counts against the bound. */
    record Entry(Object value, long bytes) {
    }

    private volatile long budget;
    private final LinkedHashMap<Key, Entry> entries = new LinkedHashMap<>(64, 0.75f, true);
    private final ConcurrentHashMap<Key, CompletableFuture<Entry>> loading = new ConcurrentHashMap<>();
    private final LongAdder hits = new LongAdder();
    private final LongAdder decodes = new LongAdder();
    private long used;

    ChunkCache(long budget) {
        this.budget = budget;
    }

    /**
     * A chunk from the cache, or decoded now (once, however many threads ask).
     *
     * @param key the chunk
     * @param decoder decodes it
     * @return the decoded chunk
     */
    Object get(Key key, Supplier<Entry> decoder) {
        synchronized (entries) {
            Entry entry = entries.get(key);
            if (entry != null) {
                hits.increment();
                return entry.value();
            }
        }
        CompletableFuture<Entry> mine = new CompletableFuture<>();
        CompletableFuture<Entry> other = loading.putIfAbsent(key, mine);
        if (other != null) {
            try {
                hits.increment();
                return other.join().value();
            } catch (CompletionException e) {
                if (e.getCause() instanceof RuntimeException cause) {
                    throw cause;
                }
                throw e;
            }
        }
        try {
            Entry entry;
            synchronized (entries) {
                entry = entries.get(key); // finished by another thread between the two looks
            }
            if (entry == null) {
                entry = decoder.get();
                decodes.increment();
                put(key, entry);
            }
            mine.complete(entry);
            return entry.value();
        } catch (RuntimeException | Error e) {
            mine.completeExceptionally(e);
            throw e;
        } finally {
            loading.remove(key, mine);
        }
    }

    /**
     * A chunk if the cache holds it, without decoding it.
     *
     * @param key the chunk
     * @return the decoded chunk, or null
     */
    Object peek(Key key) {
        synchronized (entries) {
            Entry entry = entries.get(key);
            if (entry != null) {
                hits.increment();
                return entry.value();
            }
            return null;
        }
    }

    private void put(Key key, Entry entry) {
        if (entry.bytes() > budget) {
            return;
        }
        synchronized (entries) {
            Entry old = entries.put(key, entry);
            used += entry.bytes() - (old == null ? 0 : old.bytes());
            var it = entries.entrySet().iterator();
            while (used > budget && it.hasNext()) {
                Map.Entry<Key, Entry> eldest = it.next();
                if (eldest.getKey().equals(key)) {
                    continue;
                }
                used -= eldest.getValue().bytes();
                it.remove();
            }
        }
    }

    /** Counts a chunk decoded for one read without entering the cache. */
    void decodedUncached() {
        decodes.increment();
    }

    /**
     * Raises the bound to at least this many bytes (never lowers it).
     *
     * @param bytes the least bound
     */
    void atLeast(long bytes) {
        synchronized (entries) {
            budget = Math.max(budget, bytes);
        }
    }

    long budget() {
        return budget;
    }

    long usedBytes() {
        synchronized (entries) {
            return used;
        }
    }

    long hits() {
        return hits.sum();
    }

    long decodes() {
        return decodes.sum();
    }
}
