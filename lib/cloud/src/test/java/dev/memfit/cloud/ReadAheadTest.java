package dev.memfit.cloud;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The read-ahead window on its own: what it protects, in which order it fetches, and that announcements never read
 * do not hold blocks for good.
 */
class ReadAheadTest {

    /** Records what the window asks: holds per block (never below 0), fetches started, and ends them on request. */
    private static final class Recorder implements ReadAhead.Blocks<String> {
        final Map<Path, Integer> holds = new HashMap<>();
        final List<String> events = new ArrayList<>();
        final List<Runnable> running = new ArrayList<>();

        @Override
        public void protect(Path file) {
            holds.merge(file, 1, Integer::sum);
            events.add("protect " + file);
        }

        @Override
        public void release(Path file) {
            int left = holds.get(file) - 1;
            assertTrue(left >= 0, file.toString());
            if (left == 0) {
                holds.remove(file);
            } else {
                holds.put(file, left);
            }
            events.add("release " + file);
        }

        @Override
        public boolean fetch(String object, long block, Path file, Runnable done) {
            events.add("fetch " + file);
            running.add(done);
            return true;
        }

        void finishAll() {
            List<Runnable> done = new ArrayList<>(running);
            running.clear();
            done.forEach(Runnable::run);
        }
    }

    private static Path file(long block) {
        return Path.of(block + ".block");
    }

    @Test
    void theWindowProtectsTheOldestAnnouncedBlocksAndFetchesThemInOrder() {
        Recorder blocks = new Recorder();
        ReadAhead<String> window = new ReadAhead<>(blocks, 2, 1);
        window.announce("x", 0, 3, ReadAheadTest::file, false);
        window.announce("x", 1, 1, ReadAheadTest::file, false); // block 1 announced twice
        assertEquals(Map.of(file(0), 1, file(1), 1), blocks.holds, "two blocks: the window");
        assertEquals(List.of("protect 0.block", "protect 1.block", "fetch 0.block"), blocks.events,
                "one fetch at a time, the oldest first");
        blocks.finishAll();
        assertEquals("fetch 1.block", blocks.events.getLast());
        blocks.finishAll();
        window.consume(file(0));
        assertTrue(window.protects(file(2)) && !window.protects(file(0)), blocks.holds.toString());
        // block 2 protected before block 0 is released: no moment where neither is held is needed, and the order holds
        assertTrue(blocks.events.indexOf("protect 2.block") < blocks.events.indexOf("release 0.block"), blocks.events.toString());
        window.consume(file(1));
        // block 1's second announced read comes after block 3's: the window holds the blocks of the oldest reads
        assertEquals(Map.of(file(2), 1, file(3), 1), blocks.holds);
        assertTrue(window.announced(file(1)));
        window.consume(file(7)); // never announced: nothing happens
        window.consume(file(2));
        assertEquals(Map.of(file(1), 1, file(3), 1), blocks.holds, "block 1's turn again");
        window.consume(file(3));
        window.consume(file(1));
        assertEquals(Map.of(), blocks.holds);
        assertFalse(window.announced(file(1)));
    }

    @Test
    void aReadAnnouncingItselfWithdrawsWhatItDidNotConsume() {
        Recorder blocks = new Recorder();
        ReadAhead<String> window = new ReadAhead<>(blocks, 3, 4);
        window.announce("x", 1, 1, ReadAheadTest::file, false);
        List<ReadAhead.Entry<String>> own = window.announce("x", 0, 2, ReadAheadTest::file, true);
        assertEquals(List.of(0L, 2L), own.stream().map(e -> e.block).toList(), "block 1 had its entry already");
        window.consume(file(0));
        window.withdraw(own); // failed before blocks 1 and 2
        assertEquals(Map.of(file(1), 1), blocks.holds, "the earlier announcement of block 1 stays");
    }

    @Test
    void announcementsNeverReadStopHoldingTheirBlocks() {
        Recorder blocks = new Recorder();
        ReadAhead<String> window = new ReadAhead<>(blocks, 2, 4);
        window.announce("x", 100, 100, ReadAheadTest::file, false); // a batch that failed: never read
        for (int i = 0; i < ReadAhead.STALE + 2; i++) {
            window.announce("x", i % 50, i % 50, ReadAheadTest::file, false);
            window.consume(file(i % 50));
        }
        assertFalse(window.protects(file(100)), blocks.holds.toString());
        assertEquals(Map.of(), blocks.holds);
    }

    @Test
    void aWindowOfNoBlocksIgnoresAnnouncementsAndClearReleasesAll() {
        Recorder none = new Recorder();
        ReadAhead<String> off = new ReadAhead<>(none, 0, 4);
        assertEquals(List.of(), off.announce("x", 0, 9, ReadAheadTest::file, false));
        assertEquals(List.of(), none.events);
        Recorder blocks = new Recorder();
        ReadAhead<String> window = new ReadAhead<>(blocks, 5, 4);
        window.announce("x", 0, 9, ReadAheadTest::file, false);
        assertEquals(5, blocks.holds.size());
        window.clear();
        assertEquals(Map.of(), blocks.holds);
        window.consume(file(0)); // after clear: nothing left to consume
        assertEquals(Map.of(), blocks.holds);
    }
}
