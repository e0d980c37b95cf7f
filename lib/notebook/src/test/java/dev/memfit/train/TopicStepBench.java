package dev.memfit.train;

import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.synthetic.SyntheticTopics;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Per-step overhead of the topic model, run by hand (not a test): a small corpus, so that a step's arithmetic is tiny
 * and its time is the per-op cost. Prints ms per step of every epoch after the first (warm-up), the epoch losses and
 * the training thread's CPU time per step (steadier than wall time on a shared machine), a hash of the per-step losses, to compare implementations for equal results.
 *
 * <pre>
 * java -cp ... -Dai.djl.pytorch.num_threads=1 dev.memfit.train.TopicStepBench [docs terms k batch epochs sparse device]
 * </pre>
 * The class path: memfit-notebook's test classes ({@code lib/notebook/target/test-classes}) and the CLI's class path
 * ({@code lib/cli/target/lib/*}), which holds the core and memfit-notebook.
 */
public final class TopicStepBench {

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private TopicStepBench() {
    }

    public static void main(String[] args) {
        long docs = args.length > 0 ? Long.parseLong(args[0]) : 20_000;
        int terms = args.length > 1 ? Integer.parseInt(args[1]) : 200;
        int k = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        int batch = args.length > 3 ? Integer.parseInt(args[3]) : 16;
        int epochs = args.length > 4 ? Integer.parseInt(args[4]) : 3;
        boolean sparse = args.length <= 5 || Boolean.parseBoolean(args[5]);
        String device = args.length > 6 ? args[6] : "cpu";
        List<Long> cpuAtEpochEnd = new ArrayList<>();
        try (SyntheticTopics.Corpus corpus = SyntheticTopics.builder().setDocuments(docs).setTerms(terms).setTopics(k)
                .setDocumentLength(200).optSeed(11).generate();
             TopicModel model = TopicModel.builder().setTopics(k).optEpochs(epochs).optLearningRate(0.05f).optSeed(3)
                     .optEpochListener(stats -> cpuAtEpochEnd.add(THREADS.getCurrentThreadCpuTime()))
                     .optSparseDocumentUpdates(sparse).optDevice(ai.djl.Device.fromName(device)).build();
             Loader loader = Datasets.of(corpus.counts()).optBatchSize(batch).optShuffle(5).build()) {
            FitResult fit = model.fit(loader);
            double[] ms = new double[fit.epochs() - 1];
            for (int e = 1; e < fit.epochs(); e++) {
                EpochStats stats = fit.history().get(e);
                ms[e - 1] = stats.seconds() * 1e3 / stats.steps();
            }
            double[] sorted = ms.clone();
            Arrays.sort(sorted);
            System.out.printf(Locale.ROOT, "docs %d terms %d k %d batch %d sparse %s device %s: ms/step after warm-up, "
                    + "median %.3f min %.3f, by epoch %s%n", docs, terms, k, batch, sparse, device,
                    sorted[sorted.length / 2], sorted[0], Arrays.toString(Arrays.stream(ms)
                            .map(v -> Math.round(v * 1000) / 1000.0).toArray()));
            double[] cpu = new double[fit.epochs() - 1];
            for (int e = 1; e < fit.epochs(); e++) {
                cpu[e - 1] = (cpuAtEpochEnd.get(e) - cpuAtEpochEnd.get(e - 1)) / 1e6 / fit.history().get(e).steps();
            }
            Arrays.sort(cpu);
            System.out.printf(Locale.ROOT, "training thread CPU ms/step after warm-up: median %.3f min %.3f%n",
                    cpu[cpu.length / 2], cpu[0]);
            System.out.println("epoch losses " + Arrays.toString(fit.losses()));
            System.out.println("step losses hash " + Arrays.hashCode(fit.stepLosses()) + " topicTerms hash "
                    + Arrays.deepHashCode(model.topicTerms()));
        }
    }
}
