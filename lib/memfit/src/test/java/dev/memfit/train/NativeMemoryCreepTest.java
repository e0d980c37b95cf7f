package dev.memfit.train;

import dev.memfit.synthetic.SyntheticTopics;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.memory.MemoryProbe;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Per-step NDManager scoping: 1,000 optimizer steps must not grow resident memory. A leak of one batch-sized
 * array per step would add 1,000 x 128 KB = 128 MB here.
 */
class NativeMemoryCreepTest {

    @Test
    void residentMemoryStaysFlatOverAThousandSteps() {
        try (SyntheticTopics.Corpus corpus = SyntheticTopics.builder().setDocuments(64).setTerms(2_000).setTopics(3)
                .setDocumentLength(200).optSeed(1).generate()) {
            for (boolean sparse : new boolean[]{true, false}) {
                List<Long> rss = new ArrayList<>();
                TopicModel model = TopicModel.builder().setTopics(3).optEpochs(250).optSparseDocumentUpdates(sparse).build();
                try (Loader loader = Datasets.of(corpus.counts()).optBatchSize(16).optShuffle(1).build();
                     TopicFit fit = model.fit(loader, stats -> {
                         if (stats.epoch() == 50 || stats.epoch() == 249) {
                             rss.add(MemoryProbe.now().rssAnon());
                         }
                     })) {
                    assertTrue(fit.history().stream().mapToLong(EpochStats::batches).sum() == 1_000);
                }
                long growth = rss.get(1) - rss.get(0);
                assertTrue(growth < 32L << 20, (sparse ? "sparse" : "dense") + ": RSS anonymous grew by "
                        + (growth >> 20) + " MB between step 200 and step 1,000");
            }
        }
    }
}
