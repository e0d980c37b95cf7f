package dev.memfit.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.synthetic.SyntheticTopics;
import dev.memfit.train.FitResult;
import dev.memfit.train.TopicModel;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Seconds per epoch of the topic model: memfit's trainer against tinytopics' fit loop in torch (when Debian's
 * python3-torch is installed), on the same count matrix, batch sizes and thread count, in one run.
 */
public final class TopicBenchmark {

    /**
     * The benchmark's settings.
     *
     * @param directory where the count matrix is written
     * @param documents n
     * @param terms m
     * @param topics k
     * @param batchSizes batch sizes to measure
     * @param epochs epochs per measurement (the first is reported separately as warm-up)
     * @param threads compute threads (PyTorch intra-op threads on both sides)
     * @param learningRate Adam's learning rate
     * @param baseline whether to run the torch baseline
     */
    public record Settings(Path directory, int documents, int terms, int topics, List<Integer> batchSizes, int epochs,
                           int threads, double learningRate, boolean baseline) {
    }

    /**
     * One measured line.
     *
     * @param method memfit with dense or sparse document updates, or "tinytopics loop (torch)"
     * @param batchSize the batch size
     * @param firstEpochSeconds the first epoch
     * @param epochSeconds the mean of the later epochs
     * @param finalLoss the loss of the last epoch
     */
    public record Row(String method, int batchSize, double firstEpochSeconds, double epochSeconds, double finalLoss) {
    }

    private TopicBenchmark() {
    }

    /**
     * Runs the benchmark. Set {@code ai.djl.pytorch.num_threads} before the engine starts to pin the threads.
     *
     * @param settings the settings
     * @return the rows
     * @throws java.io.IOException when the count matrix cannot be written
     */
    public static List<Row> run(Settings settings) throws java.io.IOException {
        Files.createDirectories(settings.directory());
        Path file = settings.directory().resolve("topics-" + settings.documents() + "x" + settings.terms() + ".npy");
        if (!Files.exists(file)) {
            try (SyntheticTopics.Corpus corpus = SyntheticTopics.builder().setDocuments(settings.documents())
                    .setTerms(settings.terms()).setTopics(settings.topics()).setDocumentLength(1000).optSeed(42).generate()) {
                Npy.write(file, NpyHeader.of(dev.memfit.DType.FLOAT32, settings.documents(), settings.terms()),
                        corpus.counts().data());
            }
        }
        List<Row> rows = new ArrayList<>();
        for (int batch : settings.batchSizes()) {
            for (boolean sparse : new boolean[]{false, true}) {
                try (TopicModel model = TopicModel.builder().setTopics(settings.topics()).optEpochs(settings.epochs())
                             .optLearningRate(settings.learningRate()).optSparseDocumentUpdates(sparse).build();
                     Loader loader = Datasets.npy(file).inMemory().optBatchSize(batch).optShuffle(1).build()) {
                    FitResult fit = model.fit(loader);
                    rows.add(summarize(sparse ? "memfit, sparse L updates (default)" : "memfit, dense L updates (as tinytopics)",
                            batch, fit.epochSeconds(), fit.losses()));
                }
            }
        }
        if (settings.baseline() && Baselines.pythonHas("torch")) {
            for (int batch : settings.batchSizes()) {
                JsonNode json = Baselines.json(List.of("/usr/bin/python3",
                        Baselines.sources().resolve("topics_torch.py").toString(), file.toString(),
                        Integer.toString(settings.topics()), Integer.toString(batch),
                        Integer.toString(settings.epochs()), Integer.toString(settings.threads()),
                        Double.toString(settings.learningRate())), 3600).orElse(null);
                if (json != null) {
                    double[] seconds = Baselines.doubles(json.get("epoch_seconds"));
                    double[] losses = Baselines.doubles(json.get("losses"));
                    rows.add(summarize("tinytopics loop (torch)", batch, seconds, losses));
                }
            }
        }
        return rows;
    }

    private static Row summarize(String method, int batch, double[] seconds, double[] losses) {
        double later = Baselines.laterMean(seconds);
        return new Row(method, batch, seconds[0], later, losses[losses.length - 1]);
    }
}
