package dev.memfit.bench;

import ai.djl.ndarray.NDArray;
import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.DType;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.synthetic.SyntheticAtlas;
import dev.memfit.train.FitResult;
import dev.memfit.train.GeneTransformer;
import dev.memfit.train.RankValueTokens;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Training steps of the gene-token transformer: memfit's {@link GeneTransformer} against the same model in PyTorch
 * ({@code nn.TransformerEncoderLayer(norm_first=True, activation="gelu", dropout=0)}, Debian's python3-torch), from the
 * same initial weights on the very same masked batches, with the same thread count, in one run.
 *
 * <p>memfit writes its initial weights and every batch's masked input, positions, targets and labels as {@code .npy}
 * files; the torch side ({@code environment/bench/transformer_torch.py}) loads them, so both start from one point and
 * see one input: their first losses agree to float rounding, and later ones drift apart only as far as two builds
 * of PyTorch summing in other orders (and Adam adding its epsilon elsewhere) take them; the result reports both. memfit's time is its whole fit loop (loader, rank-value
 * tokens, masks, forward, backward, Adam); torch's is forward, backward and Adam on batches already in tensors.
 */
public final class TransformerBenchmark {

    /**
     * The benchmark's settings.
     *
     * @param directory where the atlas, the weights and the batches are written
     * @param cells cells of the synthetic atlas (a multiple of the batch: every step has the same shape)
     * @param genes genes of the atlas
     * @param vocabulary gene tokens (the most expressed genes)
     * @param maxLength tokens per cell
     * @param dModel the model width
     * @param layers encoder layers
     * @param heads attention heads
     * @param batchSize cells per step
     * @param epochs passes (the first is reported apart, as warm-up)
     * @param threads the torch side's compute threads (memfit's are the engine's, set before it starts: the CLI sets
     *                {@code ai.djl.pytorch.num_threads} to the same number)
     * @param learningRate Adam's learning rate
     * @param baseline whether to run the torch side
     */
    public record Settings(Path directory, int cells, int genes, int vocabulary, int maxLength, int dModel, int layers,
                           int heads, int batchSize, int epochs, int threads, double learningRate, boolean baseline) {
    }

    /**
     * One side's measurement.
     *
     * @param method who trained
     * @param firstEpochSeconds the first epoch (warm-up)
     * @param laterEpochSeconds the mean of the later epochs
     * @param tokensPerSecond tokens (batch x max_length per step) a second over the later epochs
     * @param stepLosses the loss of every step (masked-gene plus cell-type cross-entropy)
     */
    public record Row(String method, double firstEpochSeconds, double laterEpochSeconds, double tokensPerSecond,
                      double[] stepLosses) {
    }

    /**
     * The outcome: both sides and how far their losses are apart.
     *
     * @param rows memfit, then torch when it ran
     * @param stepsPerEpoch steps in an epoch
     * @param parameters the model's parameter count
     * @param torchVersion the torch that ran, or empty
     * @param largestRelativeDifference the largest |memfit - torch| / torch over all steps (NaN without torch)
     * @param firstStepRelativeDifference the same at the first step, before any update
     * @param noTorch why there is no torch row ("" when it ran or was not asked for)
     */
    public record Result(List<Row> rows, int stepsPerEpoch, long parameters, String torchVersion,
                         double largestRelativeDifference, double firstStepRelativeDifference, String noTorch) {
    }

    private TransformerBenchmark() {
    }

    /**
     * Runs the benchmark. Set {@code ai.djl.pytorch.num_threads} before the engine starts to pin the threads.
     *
     * @param settings the settings
     * @return both sides
     * @throws IOException when the files cannot be written
     */
    public static Result run(Settings settings) throws IOException {
        if (settings.cells() % settings.batchSize() != 0) {
            throw new IllegalArgumentException("--cells " + settings.cells() + " is not a multiple of --batch "
                    + settings.batchSize() + ": every step must have one shape on both sides");
        }
        if ((long) settings.epochs() * settings.cells() * settings.maxLength() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("--epochs x --cells x --max-length is over 2^31 tokens: the batches handed "
                    + "to torch are kept in one array; fewer epochs or cells");
        }
        Files.createDirectories(settings.directory());
        Path atlasFile = settings.directory().resolve("transformer-atlas-" + settings.cells() + "x" + settings.genes() + ".h5ad");
        SyntheticAtlas.Atlas atlas = SyntheticAtlas.builder().setCells(settings.cells()).setGenes(settings.genes())
                .optSeed(7).write(atlasFile);
        int classes = Arrays.stream(atlas.labels()).max().orElse(0) + 1;
        Path exchange = settings.directory().resolve("transformer-exchange");
        dev.memfit.io.storage.Folders.deleteTree(exchange);
        Files.createDirectories(exchange.resolve("weights"));
        RankValueTokens tokens;
        try (Loader cells = Datasets.h5ad(atlasFile).optSparseBatches(true).optBatchSize(1024).build()) {
            tokens = RankValueTokens.fit(cells, settings.vocabulary(), settings.maxLength(), dev.memfit.ProgressListener.silent());
        }
        List<Row> rows = new ArrayList<>();
        long parameterCount = 0;
        int stepsPerEpoch = settings.cells() / settings.batchSize();
        try (Loader loader = Datasets.h5ad(atlasFile).optSparseBatches(true).optBatchSize(settings.batchSize())
                .optShuffle(3).build();
             GeneTransformer model = GeneTransformer.builder().setTokens(tokens).optLabels(atlas.labels(), classes)
                     .optModel(settings.dModel(), settings.layers(), settings.heads()).optEpochs(settings.epochs())
                     .optLearningRate(settings.learningRate()).optSeed(11).build()) {
            for (Map.Entry<String, NDArray> weight : model.parameters().entrySet()) {
                NDArray array = weight.getValue();
                parameterCount += array.size();
                Npy.write(exchange.resolve("weights").resolve(weight.getKey() + ".npy"),
                        NpyHeader.of(DType.FLOAT32, array.getShape().getShape()),
                        MemorySegment.ofArray(array.toFloatArray()));
            }
            writeBatches(exchange, model, loader, atlas.labels(), settings);
            FitResult fit = model.fit(loader);
            rows.add(row("memfit (DJL " + ai.djl.engine.Engine.getDjlVersion() + ", PyTorch "
                            + ai.djl.engine.Engine.getEngine("PyTorch").getVersion() + ")",
                    fit.epochSeconds(), fit.stepLosses(), settings));
        }
        String torchVersion = "";
        double largest = Double.NaN;
        double first = Double.NaN;
        String noTorch = "";
        if (settings.baseline() && !Baselines.pythonHas("torch")) {
            noTorch = "/usr/bin/python3 cannot import torch (apt-get install python3-torch)";
        } else if (settings.baseline()) {
            JsonNode json = Baselines.json(List.of("/usr/bin/python3",
                    Baselines.sources().resolve("transformer_torch.py").toString(), exchange.toString(),
                    Integer.toString(settings.threads()), Double.toString(settings.learningRate())), 3600).orElse(null);
            if (json == null) {
                noTorch = "environment/bench/transformer_torch.py failed (run it by hand on " + exchange + " to see why)";
            } else {
                torchVersion = json.get("torch").asText();
                Row torch = row("PyTorch " + torchVersion + " (nn.TransformerEncoderLayer)",
                        Baselines.doubles(json.get("epoch_seconds")), Baselines.doubles(json.get("step_losses")), settings);
                rows.add(torch);
                double[] ours = rows.getFirst().stepLosses();
                double[] theirs = torch.stepLosses();
                largest = 0;
                for (int i = 0; i < Math.min(ours.length, theirs.length); i++) {
                    largest = Math.max(largest, Math.abs(ours[i] - theirs[i]) / Math.abs(theirs[i]));
                }
                first = Math.abs(ours[0] - theirs[0]) / Math.abs(theirs[0]);
            }
        }
        return new Result(rows, stepsPerEpoch, parameterCount, torchVersion, largest, first, noTorch);
    }

    /**
     * Writes every batch of every epoch as the fit will see it: {@code ids} (steps x batch x length, masked),
     * {@code lengths}, {@code labels} (steps x batch), and the masked {@code positions} and {@code targets} of all
     * steps end to end with {@code offsets} (steps + 1) saying where each step's begin.
     */
    private static void writeBatches(Path exchange, GeneTransformer model, Loader loader, int[] labels, Settings settings) {
        int steps = settings.epochs() * (settings.cells() / settings.batchSize());
        int b = settings.batchSize();
        int t = settings.maxLength();
        long[] ids = new long[steps * b * t];
        long[] lengths = new long[steps * b];
        long[] cellLabels = new long[steps * b];
        long[] offsets = new long[steps + 1];
        List<long[]> positions = new ArrayList<>();
        List<long[]> targets = new ArrayList<>();
        int step = 0;
        for (int epoch = 0; epoch < settings.epochs(); epoch++) {
            for (Batch batch : loader.epoch(epoch)) {
                GeneTransformer.MaskedTokens masked = model.maskedTokens(batch);
                System.arraycopy(masked.input(), 0, ids, step * b * t, b * t);
                long[] indices = batch.indices();
                for (int i = 0; i < b; i++) {
                    lengths[step * b + i] = masked.cells().lengths()[i];
                    cellLabels[step * b + i] = labels[Math.toIntExact(indices[i])];
                }
                positions.add(masked.positions());
                targets.add(masked.targets());
                offsets[step + 1] = offsets[step] + masked.positions().length;
                step++;
            }
        }
        try {
            Files.writeString(exchange.resolve("settings.json"), "{\"heads\": " + settings.heads()
                    + ", \"steps_per_epoch\": " + settings.cells() / b + "}\n");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        write(exchange.resolve("ids.npy"), ids, steps, b, t);
        write(exchange.resolve("lengths.npy"), lengths, steps, b);
        write(exchange.resolve("labels.npy"), cellLabels, steps, b);
        write(exchange.resolve("offsets.npy"), offsets, steps + 1);
        write(exchange.resolve("positions.npy"), concat(positions), offsets[steps]);
        write(exchange.resolve("targets.npy"), concat(targets), offsets[steps]);
    }

    private static void write(Path file, long[] values, long... shape) {
        Npy.write(file, NpyHeader.of(DType.INT64, shape), MemorySegment.ofArray(values));
    }

    private static long[] concat(List<long[]> parts) {
        long[] all = new long[parts.stream().mapToInt(part -> part.length).sum()];
        int at = 0;
        for (long[] part : parts) {
            System.arraycopy(part, 0, all, at, part.length);
            at += part.length;
        }
        return all;
    }

    private static Row row(String method, double[] epochSeconds, double[] losses, Settings settings) {
        double later = Baselines.laterMean(epochSeconds);
        double tokensPerEpoch = (double) settings.cells() * settings.maxLength();
        return new Row(method, epochSeconds[0], later, tokensPerEpoch / later, losses);
    }
}
