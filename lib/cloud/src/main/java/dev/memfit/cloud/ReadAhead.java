package dev.memfit.cloud;

import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The reads a {@link BlockCache} was told are coming, block by block in the order they were announced, and the
 * window of them it protects and fetches ahead: the blocks of the oldest announced reads, at most as many distinct
 * blocks as the limit holds besides the one being read.
 *
 * <p>Each announced read of a block is an entry; a read of the block consumes its oldest entry once the bytes are
 * copied (loaders announce each run of a batch and then read it, one to one). A block stays protected from eviction
 * while an admitted entry of it is left, so a block fetched ahead is never evicted before it is read, nor a block
 * that announced reads still need; entries are admitted in order as consumed ones make room, and each newly protected
 * block that is missing is fetched, at most {@code parallel} at a time, in that order. Read-ahead therefore never
 * needs more of the limit than the window, and a limit of one block has no window: blocks are then fetched as they
 * are read.
 *
 * <p>Entries that are never consumed (a batch that failed half-way, a caller that announced and did not read) would
 * keep their blocks protected: the oldest entry is dropped once reads have consumed {@link #STALE} entries announced
 * after it (or four times as many as are waiting), so the window cannot fill up with them for good.
 *
 * @param <T> what the cache needs to fetch a block (its object)
 */
final class ReadAhead<T> {

    /** Consumed entries announced after the oldest one, beyond which the oldest one counts as never to be read. */
    static final long STALE = 4096;
    /** Entries kept at most: announcements beyond them are ignored (a hint, never needed for a read to succeed). */
    static final int MAX_ENTRIES = 1 << 16;

    /** What the window asks of the cache. */
    interface Blocks<T> {
        /** Keeps a block from eviction (counted: each call is undone by one {@link #release}). */
        void protect(Path file);

        /** Undoes one {@link #protect}. */
        void release(Path file);

        /**
         * Starts fetching a block in the background unless it is cached or coming already, and runs {@code done} when
         * that fetch ends (whether it worked or not).
         *
         * @return false when nothing was started ({@code done} is then not run)
         */
        boolean fetch(T object, long block, Path file, Runnable done);
    }

    /** One announced read of one block. */
    static final class Entry<T> {
        final T object;
        final long block;
        final Path file;
        final long seq;
        Entry<T> previous;
        Entry<T> next;
        boolean admitted;
        boolean linked = true;

        Entry(T object, long block, Path file, long seq) {
            this.object = object;
            this.block = block;
            this.file = file;
            this.seq = seq;
        }
    }

    private final Blocks<T> blocks;
    private final int windowBlocks;
    private final int parallel;
    private Entry<T> head;
    private Entry<T> tail;
    /** The oldest entry not admitted yet; null when all are. */
    private Entry<T> frontier;
    /** The entries of each block, oldest first. */
    private final Map<Path, ArrayDeque<Entry<T>>> byBlock = new HashMap<>();
    /**
     * The keys of {@link #byBlock}, readable without the lock: a read of a block nobody announced (most reads of a
     * warm cache) costs a hash lookup, not the lock that every reader thread would contend for.
     */
    private final Set<Path> announcedBlocks = ConcurrentHashMap.newKeySet();
    /** The protected blocks, each with its admitted entries. */
    private final Map<Path, Integer> admitted = new HashMap<>();
    /** Newly protected blocks, in order, whose fetch is still to start. */
    private final ArrayDeque<Entry<T>> toFetch = new ArrayDeque<>();
    private int running;
    /** {@link #toFetch}'s size, readable without the lock. */
    private volatile int fetchesWaiting;
    private long nextSeq;
    private long consumedSeq;
    private int size;
    /** {@link #size}, readable without the lock. */
    private volatile int live;

    /**
     * @param blocks the cache's side
     * @param windowBlocks the most distinct blocks protected at once (0: no read-ahead, announcements are ignored)
     * @param parallel the most fetches started by the window at once
     */
    ReadAhead(Blocks<T> blocks, int windowBlocks, int parallel) {
        this.blocks = blocks;
        this.windowBlocks = windowBlocks;
        this.parallel = parallel;
    }

    /** The most distinct blocks protected at once. */
    int windowBlocks() {
        return windowBlocks;
    }

    /**
     * Announces a read of blocks {@code first..last} of an object (one entry each) and starts what the window now
     * holds.
     *
     * @param files each block's file, by block index
     * @param onlyWhereNone add an entry only for blocks without one (a read announcing itself: an entry announced
     *                      before will be consumed by it)
     * @return with {@code onlyWhereNone}, the entries made, for {@link #withdraw}; otherwise an empty list
     */
    List<Entry<T>> announce(T object, long first, long last, java.util.function.LongFunction<Path> files,
                            boolean onlyWhereNone) {
        if (windowBlocks == 0 || last < first) {
            return List.of();
        }
        // only a read announcing itself withdraws its entries: the others are not collected
        List<Entry<T>> made = onlyWhereNone ? new ArrayList<>() : List.of();
        synchronized (this) {
            for (long block = first; block <= last && size < MAX_ENTRIES; block++) {
                Path file = files.apply(block);
                if (onlyWhereNone && byBlock.containsKey(file)) {
                    continue;
                }
                Entry<T> entry = new Entry<>(object, block, file, nextSeq++);
                append(entry);
                if (onlyWhereNone) {
                    made.add(entry);
                }
            }
            admit(List.of());
        }
        pump();
        return made;
    }

    /** Ends a read of a block: its oldest entry is consumed (nothing when it has none). */
    void consume(Path file) {
        if (live == 0 || !announcedBlocks.contains(file)) {
            return;
        }
        List<Path> released;
        synchronized (this) {
            ArrayDeque<Entry<T>> entries = byBlock.get(file);
            if (entries == null) {
                return;
            }
            List<Path> dropped = new ArrayList<>(1);
            Entry<T> entry = entries.peekFirst();
            consumedSeq = Math.max(consumedSeq, entry.seq);
            remove(entry, dropped);
            while (head != null && consumedSeq - head.seq > Math.max(STALE, 4L * size)) {
                remove(head, dropped);
            }
            released = admit(dropped);
        }
        finish(released);
    }

    /** Removes entries a read announced for itself and did not consume (it failed, or consumed older ones). */
    void withdraw(List<Entry<T>> entries) {
        if (entries.isEmpty()) {
            return;
        }
        List<Path> released;
        synchronized (this) {
            List<Path> dropped = new ArrayList<>();
            for (Entry<T> entry : entries) {
                remove(entry, dropped);
            }
            released = admit(dropped);
        }
        finish(released);
    }

    /**
     * Whether a read of the block was announced and not done yet.
     *
     * @param file the block's file
     * @return true when it has an entry
     */
    boolean announced(Path file) {
        return live > 0 && announcedBlocks.contains(file);
    }

    /**
     * Whether the window protects a block now, for tests and tools.
     *
     * @param file the block's file
     * @return true when an admitted entry of it is left
     */
    synchronized boolean protects(Path file) {
        return admitted.containsKey(file);
    }

    /** Forgets every announcement, releasing the blocks it protected. */
    void clear() {
        List<Path> released;
        synchronized (this) {
            released = new ArrayList<>(admitted.keySet());
            admitted.clear();
            byBlock.clear();
            announcedBlocks.clear();
            toFetch.clear();
            fetchesWaiting = 0;
            for (Entry<T> entry = head; entry != null; entry = entry.next) {
                entry.linked = false;
            }
            head = null;
            tail = null;
            frontier = null;
            size = 0;
            live = 0;
        }
        for (Path file : released) {
            blocks.release(file);
        }
    }

    private void append(Entry<T> entry) {
        entry.previous = tail;
        if (tail != null) {
            tail.next = entry;
        } else {
            head = entry;
        }
        tail = entry;
        if (frontier == null) {
            frontier = entry;
        }
        byBlock.computeIfAbsent(entry.file, f -> {
            announcedBlocks.add(f);
            return new ArrayDeque<>(2);
        }).addLast(entry);
        live = ++size;
    }

    /** Unlinks an entry; a block whose last admitted entry it was goes to {@code dropped} (still protected). */
    private void remove(Entry<T> entry, List<Path> dropped) {
        if (!entry.linked) {
            return;
        }
        entry.linked = false;
        if (frontier == entry) {
            frontier = entry.next;
        }
        if (entry.previous != null) {
            entry.previous.next = entry.next;
        } else {
            head = entry.next;
        }
        if (entry.next != null) {
            entry.next.previous = entry.previous;
        } else {
            tail = entry.previous;
        }
        entry.previous = null;
        entry.next = null;
        ArrayDeque<Entry<T>> entries = byBlock.get(entry.file);
        entries.remove(entry);
        if (entries.isEmpty()) {
            byBlock.remove(entry.file);
            announcedBlocks.remove(entry.file);
        }
        live = --size;
        if (entry.admitted) {
            int left = admitted.get(entry.file) - 1;
            if (left == 0) {
                // out of the window once the next entries are admitted: released after them, so that a block
                // admitted again by a later entry is never unprotected in between
                admitted.remove(entry.file);
                dropped.add(entry.file);
            } else {
                admitted.put(entry.file, left);
            }
        }
    }

    /**
     * Admits entries from the frontier while the window has room (protecting their blocks), and returns the dropped
     * blocks, to release outside the lock once the new ones are protected.
     */
    private List<Path> admit(List<Path> dropped) {
        while (frontier != null) {
            Entry<T> entry = frontier;
            Integer count = admitted.get(entry.file);
            if (count == null) {
                if (admitted.size() >= windowBlocks) {
                    break;
                }
                admitted.put(entry.file, 1);
                blocks.protect(entry.file);
                toFetch.addLast(entry);
                fetchesWaiting = toFetch.size();
            } else {
                admitted.put(entry.file, count + 1);
            }
            entry.admitted = true;
            frontier = entry.next;
        }
        // a dropped block admitted again above was protected once more: releasing the old protection is still right
        return dropped;
    }

    /** Releases blocks that left the window and starts the fetches it now allows. */
    private void finish(List<Path> released) {
        for (int i = 0; i < released.size(); i++) {
            blocks.release(released.get(i));
        }
        pump();
    }

    /** Starts fetches of newly protected blocks, oldest first, while fewer than {@code parallel} run. */
    private void pump() {
        while (fetchesWaiting > 0) {
            Entry<T> next = null;
            synchronized (this) {
                if (running >= parallel) {
                    return;
                }
                for (Entry<T> entry = toFetch.pollFirst(); entry != null; entry = toFetch.pollFirst()) {
                    if (admitted.containsKey(entry.file)) {
                        next = entry;
                        break;
                    }
                }
                fetchesWaiting = toFetch.size();
                if (next == null) {
                    return;
                }
                running++;
            }
            boolean started = false;
            try {
                started = blocks.fetch(next.object, next.block, next.file, this::fetched);
            } finally {
                if (!started) {
                    synchronized (this) {
                        running--;
                    }
                }
            }
        }
    }

    private void fetched() {
        synchronized (this) {
            running--;
        }
        pump();
    }
}
