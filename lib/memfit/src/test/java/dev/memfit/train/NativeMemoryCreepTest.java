package dev.memfit.train;

import dev.memfit.synthetic.SyntheticTopics;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.memory.MemoryProbe;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Per-step NDManager scoping: 1,000 optimizer steps must not grow resident memory outside the Java heap (whose
 * committed size the GC changes as it likes). A leak of one batch-sized array per step would add 1,000 x 128 KB =
 * 128 MB here.
 */
class NativeMemoryCreepTest {

    @Test
    void residentMemoryStaysFlatOverAThousandSteps() {
        try (SyntheticTopics.Corpus corpus = SyntheticTopics.builder().setDocuments(64).setTerms(2_000).setTopics(3)
                .setDocumentLength(200).optSeed(1).generate()) {
            for (boolean sparse : new boolean[]{true, false}) {
                List<Long> rss = new ArrayList<>();
                try (TopicModel model = TopicModel.builder().setTopics(3).optEpochs(250).optSparseDocumentUpdates(sparse)
                             .optEpochListener(stats -> {
                                 if (stats.epoch() == 51 || stats.epoch() == 250) {
                                     // the Java heap is anonymous memory too: count what lies outside it
                                     long heap = java.lang.management.ManagementFactory.getMemoryMXBean()
                                             .getHeapMemoryUsage().getCommitted();
                                     rss.add(MemoryProbe.now().rssAnon() - heap);
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
}
