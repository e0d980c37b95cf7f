package dev.memfit.train;

import dev.memfit.synthetic.SyntheticTopics;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import org.junit.jupiter.api.Test;

import javax.management.ObjectName;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Per-step NDManager scoping: 1,000 optimizer steps must not grow resident memory outside the Java heap. A leak of
 * one batch-sized array per step would add 1,000 x 128 KB = 128 MB here.
 *
 * <p>The heap is left out by address, not by size: its committed size is not what is resident. G1 commits some
 * 380 MB at start, but a page of it becomes resident only when first written, so while eden moves into regions it has
 * not used before, {@code RssAnon} grows with the Java allocation rate (about 53 KB of Java objects per batch with
 * sparse document updates, 35 KB with dense ones) until the whole committed heap has been touched. {@code RssAnon}
 * minus the committed heap grew by about 30 KB per batch that way, with no native leak: over 4,000 batches the heap's
 * resident pages rose from 24 MB to 138 MB of 380 MB committed while the anonymous pages outside the heap moved by
 * 8 MB, in steps while C2 compiles (its arenas, freed but kept by malloc; flat with {@code -XX:TieredStopAtLevel=1}).
 */
class NativeMemoryCreepTest {

    /** The first line of a mapping in {@code /proc/self/smaps}: its start and end addresses. */
    private static final Pattern MAPPING = Pattern.compile("^([0-9a-f]+)-([0-9a-f]+) ");

    @Test
    void residentMemoryStaysFlatOverAThousandSteps() {
        try (SyntheticTopics.Corpus corpus = SyntheticTopics.builder().setDocuments(64).setTerms(2_000).setTopics(3)
                .setDocumentLength(200).optSeed(1).generate()) {
            for (boolean sparse : new boolean[]{true, false}) {
                List<Long> rss = new ArrayList<>();
                try (TopicModel model = TopicModel.builder().setTopics(3).optEpochs(250).optSparseDocumentUpdates(sparse)
                             .optEpochListener(stats -> {
                                 if (stats.epoch() == 51 || stats.epoch() == 250) {
                                     rss.add(residentAnonymousOutsideHeap());
                                 }
                             }).build();
                     Loader loader = Datasets.of(corpus.counts()).optBatchSize(16).optShuffle(1).build()) {
                    assertEquals(1_000, model.fit(loader).steps());
                }
                long growth = rss.get(1) - rss.get(0);
                assertTrue(growth < 32L << 20, (sparse ? "sparse" : "dense") + ": RSS anonymous outside the Java heap grew by "
                        + (growth >> 20) + " MB between step 200 and step 1,000");
            }
        }
    }

    /**
     * Resident anonymous memory outside the Java heap: the {@code Anonymous} pages of every mapping in
     * {@code /proc/self/smaps} that does not lie in the heap's reserved address range.
     */
    private static long residentAnonymousOutsideHeap() {
        long[] heap = heapRange();
        long bytes = 0;
        boolean inHeap = false;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
                Matcher mapping = MAPPING.matcher(line);
                if (mapping.find()) {
                    long start = Long.parseUnsignedLong(mapping.group(1), 16);
                    long end = Long.parseUnsignedLong(mapping.group(2), 16);
                    inHeap = start >= heap[0] && end <= heap[1];
                } else if (!inHeap && line.startsWith("Anonymous:")) {
                    bytes += Long.parseLong(line.substring("Anonymous:".length()).trim().split("\\s+")[0]) * 1024;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes;
    }

    /** The Java heap's reserved addresses, [start, end), from {@code jcmd GC.heap_info}. */
    private static long[] heapRange() {
        String info;
        try {
            info = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "gcHeapInfo",
                    new Object[]{null}, new String[]{String[].class.getName()});
        } catch (Exception e) {
            throw new IllegalStateException("GC.heap_info is not available", e);
        }
        // G1 prints [start, end); other collectors print [start, top, end) per space: take the outermost bounds.
        long start = Long.MAX_VALUE;
        long end = Long.MIN_VALUE;
        Matcher address = Pattern.compile("0x([0-9a-f]+)").matcher(info);
        while (address.find()) {
            long value = Long.parseUnsignedLong(address.group(1), 16);
            start = Math.min(start, value);
            end = Math.max(end, value);
        }
        assertTrue(start < end, "no heap address range in GC.heap_info: " + info);
        return new long[]{start, end};
    }
}
