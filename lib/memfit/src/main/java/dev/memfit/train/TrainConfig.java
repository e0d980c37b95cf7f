package dev.memfit.train;

import dev.memfit.MemfitException;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;

import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * One training run described by a YAML file with the single-cell guide's keys, the same object for
 * {@code ./memfit train --config atlas.yaml} and for a notebook ({@code TrainConfig.load(path)}):
 *
 * <pre>{@code
 * data:
 *   source: local                 # local, or s3 / gs: shard_dir is then a bucket address
 *   shards: {enabled: true, shard_dir: ./atlas_shards/}
 *   gene_selection: {strategy: most_expressed, n_genes: 2048}   # or all
 * training:
 *   batch_size: 256
 *   num_epochs: 10
 *   accumulate_grad_batches: 2
 *   precision: bf16-mixed         # or 32-true
 *   pin_memory: true
 *   sampling: {strategy: weighted, label_key: cell_type, curriculum_warmup_epochs: 3}   # or uniform
 *   checkpoint_dir: ./runs/atlas  # memfit's checkpoints (optional)
 * model: {architecture: transformer_encoder, d_model: 512, n_layers: 8, n_heads: 8}
 * tokenizer: {strategy: rank_value, max_length: 2048}
 * }</pre>
 *
 * <p>Every key is checked when the file is read: an unknown key, a wrong value, a key given twice or written dotted
 * ({@code training.batch_size: 64} inside a file) is refused naming the file, the line, the key and what was expected,
 * so a typo never trains with a default. Missing keys take defaults ({@code data.shards.shard_dir} is required):
 * source local, most_expressed 2048 genes, batch 256, 10 epochs, no accumulation, 32-true, no pinning, uniform
 * sampling (label_key cell_type, no warm-up), no checkpoints, d_model 512, 8 layers, 8 heads, rank_value 2048 tokens
 * ({@link #toYaml()} prints them all). Relative paths are resolved against the folder of the config file,
 * so a config works from any working directory. {@link #load(Path, List)} applies {@code key=value} overrides, as
 * {@code --set training.batch_size=64} does.
 *
 * @param file the config file, or null for a config made from text
 * @param data where the cells come from
 * @param training the loop's settings
 * @param model the network
 * @param tokenizer how a cell becomes tokens
 */
public record TrainConfig(Path file, Data data, Training training, Model model, Tokenizer tokenizer) {

    /**
     * Where the cells come from.
     *
     * @param source {@code local}, {@code s3} or {@code gs}
     * @param shardDir the shard folder (a path resolved against the config's folder, or a bucket address)
     * @param geneStrategy how genes are selected: {@code most_expressed} (the {@code genes} with the largest total counts)
     *                     or {@code all} (every expressed gene)
     * @param genes how many genes are kept
     */
    public record Data(String source, String shardDir, String geneStrategy, int genes) {
    }

    /**
     * The loop's settings.
     *
     * @param batchSize cells per mini-batch
     * @param epochs epochs
     * @param accumulation mini-batches per optimizer step
     * @param bf16 whether the forward and backward passes run in bfloat16 with float32 master weights
     *             ({@code bf16-mixed}); false for float32 ({@code 32-true})
     * @param pinMemory whether batch buffers are page-locked for the GPU
     * @param weighted whether cells are drawn weighted by the inverse frequency of their label (else uniformly)
     * @param labelKey the {@code obs} column of cell labels (the cell-type head's classes, and the weights)
     * @param labelKeyGiven whether the config names it (then the column must exist; the default may be absent,
     *                      for pretraining only)
     * @param warmupEpochs epochs over which weighted sampling moves from uniform to fully weighted
     * @param checkpointDir where checkpoints go (resolved against the config's folder), or null for none
     */
    public record Training(int batchSize, int epochs, int accumulation, boolean bf16, boolean pinMemory, boolean weighted,
                           String labelKey, boolean labelKeyGiven, int warmupEpochs, Path checkpointDir) {
    }

    /**
     * The network.
     *
     * @param architecture {@code transformer_encoder}
     * @param dModel the width of the token embeddings
     * @param layers encoder layers
     * @param heads attention heads, dividing {@code dModel}
     */
    public record Model(String architecture, int dModel, int layers, int heads) {
    }

    /**
     * How a cell becomes tokens.
     *
     * @param strategy {@code rank_value}: the cell's expressed genes ordered by normalized expression, highest first
     * @param maxLength tokens per cell: the top genes, padded when a cell expresses fewer
     */
    public record Tokenizer(String strategy, int maxLength) {
    }

    /** One key: its dotted name, what it holds, its default (null: required). */
    private record Key(String name, Kind kind, Object fallback, List<String> choices) {
        String expected() {
            return switch (kind) {
                case COUNT -> "a whole number >= 1";
                case NON_NEGATIVE -> "a whole number >= 0";
                case FLAG -> "true or false";
                case CHOICE -> "one of " + String.join(", ", choices);
                case TEXT -> "a text";
            };
        }
    }

    private enum Kind { COUNT, NON_NEGATIVE, FLAG, CHOICE, TEXT }

    private static final List<Key> KEYS = List.of(
            new Key("data.source", Kind.CHOICE, "local", List.of("local", "s3", "gs")),
            new Key("data.shards.enabled", Kind.FLAG, true, null),
            new Key("data.shards.shard_dir", Kind.TEXT, null, null),
            new Key("data.gene_selection.strategy", Kind.CHOICE, "most_expressed", List.of("most_expressed", "all")),
            new Key("data.gene_selection.n_genes", Kind.COUNT, 2048, null),
            new Key("training.batch_size", Kind.COUNT, 256, null),
            new Key("training.num_epochs", Kind.COUNT, 10, null),
            new Key("training.accumulate_grad_batches", Kind.COUNT, 1, null),
            new Key("training.precision", Kind.CHOICE, "32-true", List.of("32-true", "32", "bf16-mixed")),
            new Key("training.pin_memory", Kind.FLAG, false, null),
            new Key("training.sampling.strategy", Kind.CHOICE, "uniform", List.of("uniform", "weighted")),
            new Key("training.sampling.label_key", Kind.TEXT, "cell_type", null),
            new Key("training.sampling.curriculum_warmup_epochs", Kind.NON_NEGATIVE, 0, null),
            new Key("training.checkpoint_dir", Kind.TEXT, "", null),
            new Key("model.architecture", Kind.CHOICE, "transformer_encoder", List.of("transformer_encoder")),
            new Key("model.d_model", Kind.COUNT, 512, null),
            new Key("model.n_layers", Kind.COUNT, 8, null),
            new Key("model.n_heads", Kind.COUNT, 8, null),
            new Key("tokenizer.strategy", Kind.CHOICE, "rank_value", List.of("rank_value")),
            new Key("tokenizer.max_length", Kind.COUNT, 2048, null));

    /**
     * Reads a config file.
     *
     * @param file the YAML file
     * @return the checked config
     * @throws MemfitException naming the file, line and key of the first unknown key or wrong value
     */
    public static TrainConfig load(Path file) {
        return load(file, List.of());
    }

    /**
     * Reads a config file and applies overrides, in order.
     *
     * @param file the YAML file
     * @param overrides {@code key=value} pairs with dotted keys, such as {@code training.batch_size=64}; each value is
     *                  read as YAML ({@code true}, {@code 64}, {@code bf16-mixed})
     * @return the checked config
     * @throws MemfitException for an unknown key or a wrong value, in the file or in an override
     */
    public static TrainConfig load(Path file, List<String> overrides) {
        try (Reader reader = Files.newBufferedReader(file)) {
            return parse(reader, file.toString(), file.toAbsolutePath().getParent(), overrides).withFile(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the config " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * Reads a config from text, relative paths resolved against a folder.
     *
     * @param yaml the YAML text
     * @param folder the folder relative paths are resolved against
     * @param overrides {@code key=value} overrides, as for {@link #load(Path, List)}
     * @return the checked config
     */
    public static TrainConfig parse(String yaml, Path folder, List<String> overrides) {
        return parse(new StringReader(yaml), "the config", folder, overrides);
    }

    private TrainConfig withFile(Path path) {
        return new TrainConfig(path, data, training, model, tokenizer);
    }

    /** The same settings, not tied to a file (for comparing a config with its {@link #toYaml()} read back). */
    TrainConfig withoutFile() {
        return withFile(null);
    }

    private static TrainConfig parse(Reader reader, String name, Path folder, List<String> overrides) {
        Node root;
        try {
            root = new Yaml(new LoaderOptions()).compose(reader);
        } catch (org.yaml.snakeyaml.error.YAMLException e) {
            throw new MemfitException(name + ": not valid YAML: " + e.getMessage().replace('\n', ' '));
        }
        Map<String, Object> values = new LinkedHashMap<>();
        if (root != null) {
            if (!(root instanceof MappingNode mapping)) {
                throw new MemfitException(name + " line " + line(root) + ": expected sections data, training, model, "
                        + "tokenizer, found " + root.getNodeId());
            }
            collect(mapping, "", name, values);
        }
        for (String override : overrides) {
            int equals = override.indexOf('=');
            if (equals <= 0) {
                throw new MemfitException("--set " + override + ": expected key=value, such as training.batch_size=64");
            }
            String key = override.substring(0, equals).trim();
            Key known = known(key, "--set " + override);
            Node node;
            try {
                node = new Yaml().compose(new StringReader(override.substring(equals + 1)));
            } catch (org.yaml.snakeyaml.error.YAMLException e) {
                throw new MemfitException("--set " + override + ": " + key + ": not a YAML value: "
                        + e.getMessage().replace('\n', ' '));
            }
            if (node != null && !(node instanceof ScalarNode)) {
                throw new MemfitException("--set " + override + ": " + key + ": expected " + known.expected());
            }
            values.put(key, convert(known, node == null ? "" : ((ScalarNode) node).getValue(), "--set " + override));
        }
        java.util.Set<String> given = new java.util.HashSet<>(values.keySet());
        for (Key key : KEYS) {
            if (!values.containsKey(key.name())) {
                if (key.fallback() == null) {
                    throw new MemfitException(name + ": " + key.name() + " is required (" + key.expected() + ")");
                }
                values.put(key.name(), key.fallback());
            }
        }
        return build(values, given, name, folder);
    }

    /** Walks a mapping: sections recurse, leaves are converted, anything else is refused with its line. */
    private static void collect(MappingNode mapping, String prefix, String name, Map<String, Object> values) {
        Map<String, Integer> seen = new LinkedHashMap<>();
        for (NodeTuple tuple : mapping.getValue()) {
            Node keyNode = tuple.getKeyNode();
            if (!(keyNode instanceof ScalarNode keyScalar)) {
                throw new MemfitException(name + " line " + line(keyNode) + ": expected a key, found " + keyNode.getNodeId());
            }
            String key = prefix + keyScalar.getValue();
            String where = name + " line " + line(keyNode);
            if (keyScalar.getValue().contains(".")) {
                // a dotted key would bypass the sections' checks (a key given twice, once dotted): --set is for those
                throw new MemfitException(where + ": " + keyScalar.getValue() + ": write keys nested under their section "
                        + "(or override one with --set " + key + "=...)");
            }
            Integer first = seen.putIfAbsent(key, line(keyNode));
            if (first != null) {
                // YAML would keep the last silently: a config that says two things is refused
                throw new MemfitException(where + ": " + key + " is given twice (first on line " + first + ")");
            }
            Node value = tuple.getValueNode();
            boolean section = KEYS.stream().anyMatch(k -> k.name().startsWith(key + "."));
            if (section) {
                if (!(value instanceof MappingNode inner)) {
                    throw new MemfitException(where + ": " + key + " is a section; expected its keys ("
                            + childrenOf(key) + ")");
                }
                collect(inner, key + ".", name, values);
                continue;
            }
            Key known = known(key, where);
            if (!(value instanceof ScalarNode scalar)) {
                throw new MemfitException(where + ": " + key + ": expected " + known.expected() + ", found a "
                        + value.getNodeId());
            }
            if (scalar.getTag() == org.yaml.snakeyaml.nodes.Tag.NULL && known.kind() == Kind.TEXT
                    && !key.equals("training.checkpoint_dir")) {
                throw new MemfitException(where + ": " + key + ": expected " + known.expected() + ", found no value");
            }
            values.put(key, convert(known, scalar.getTag() == org.yaml.snakeyaml.nodes.Tag.NULL ? "" : scalar.getValue(), where));
        }
    }

    private static Key known(String key, String where) {
        return KEYS.stream().filter(k -> k.name().equals(key)).findFirst().orElseThrow(() -> {
            int dot = key.lastIndexOf('.');
            String section = dot < 0 ? "" : key.substring(0, dot);
            String siblings = childrenOf(section);
            return new MemfitException(where + ": unknown key " + key + (siblings.isEmpty()
                    ? "; the sections are data, training, model, tokenizer"
                    : "; " + (section.isEmpty() ? "the sections are " : section + " has ") + siblings));
        });
    }

    /** The keys and sections directly under a section ("" for the top level). */
    private static String childrenOf(String section) {
        String prefix = section.isEmpty() ? "" : section + ".";
        return KEYS.stream().map(Key::name).filter(n -> n.startsWith(prefix))
                .map(n -> n.substring(prefix.length()).replaceAll("\\..*", "")).distinct()
                .collect(Collectors.joining(", "));
    }

    private static Object convert(Key key, String text, String where) {
        String value = text.trim();
        Object converted = switch (key.kind()) {
            case COUNT, NON_NEGATIVE -> {
                try {
                    int number = Integer.parseInt(value.replace("_", ""));
                    yield number >= (key.kind() == Kind.COUNT ? 1 : 0) ? number : null;
                } catch (NumberFormatException e) {
                    yield null;
                }
            }
            case FLAG -> value.equalsIgnoreCase("true") ? Boolean.TRUE : value.equalsIgnoreCase("false") ? Boolean.FALSE : null;
            case CHOICE -> key.choices().contains(value) ? value : null;
            case TEXT -> value.startsWith("~") || value.isEmpty() && !key.name().equals("training.checkpoint_dir") ? null : value;
        };
        if (converted == null) {
            throw new MemfitException(where + ": " + key.name() + ": expected " + key.expected() + ", found '" + value + "'"
                    + (value.startsWith("~") ? " (a home folder is not expanded: write the path out)" : "")
                    + (key.name().equals("training.precision") && value.startsWith("16")
                    ? " (float16 is not supported on the CPU engine; bf16-mixed keeps float32's range)" : ""));
        }
        return converted;
    }

    private static TrainConfig build(Map<String, Object> values, java.util.Set<String> given, String name, Path folder) {
        if (!(Boolean) values.get("data.shards.enabled")) {
            throw new MemfitException(name + ": data.shards.enabled is false, and training reads shards: set it to true "
                    + "and point data.shards.shard_dir at a folder written by ./memfit shard");
        }
        String source = (String) values.get("data.source");
        String shardDir = (String) values.get("data.shards.shard_dir");
        if (source.equals("local")) {
            shardDir = folder.resolve(shardDir).normalize().toString();
        } else if (!shardDir.startsWith(source + "://")) {
            throw new MemfitException(name + ": data.source is " + source + ", so data.shards.shard_dir must be an address "
                    + source + "://bucket/folder, found '" + shardDir + "'");
        }
        int dModel = (Integer) values.get("model.d_model");
        int heads = (Integer) values.get("model.n_heads");
        if (dModel % heads != 0) {
            throw new MemfitException(name + ": model.d_model (" + dModel + ") must be a multiple of model.n_heads ("
                    + heads + "): each head takes d_model / n_heads of the width");
        }
        String checkpoints = (String) values.get("training.checkpoint_dir");
        Data data = new Data(source, shardDir, (String) values.get("data.gene_selection.strategy"),
                (Integer) values.get("data.gene_selection.n_genes"));
        Training training = new Training((Integer) values.get("training.batch_size"), (Integer) values.get("training.num_epochs"),
                (Integer) values.get("training.accumulate_grad_batches"), values.get("training.precision").equals("bf16-mixed"),
                (Boolean) values.get("training.pin_memory"), values.get("training.sampling.strategy").equals("weighted"),
                (String) values.get("training.sampling.label_key"), given.contains("training.sampling.label_key"),
                (Integer) values.get("training.sampling.curriculum_warmup_epochs"),
                checkpoints.isEmpty() ? null : folder.resolve(checkpoints).normalize());
        return new TrainConfig(null, data, training,
                new Model((String) values.get("model.architecture"), dModel, (Integer) values.get("model.n_layers"), heads),
                new Tokenizer((String) values.get("tokenizer.strategy"), (Integer) values.get("tokenizer.max_length")));
    }

    private static int line(Node node) {
        return node.getStartMark().getLine() + 1;
    }

    /**
     * Runs the config: opens the shards, reads the labels ({@code label_key} of the shards' cell tables: the cell-type
     * head's classes and the weights; without that column, masked-gene pretraining only, unless sampling is
     * weighted), fits the rank-value tokens on the cells, and trains a {@link GeneTransformer} on sparse batches in the
     * configured order, with checkpoints in {@code checkpoint_dir} (a run interrupted there resumes from its last
     * checkpoint when run again).
     *
     * @param progress shows the passes and the training
     * @return the trained model and what it learned, to be closed
     */
    public Trained train(dev.memfit.ProgressListener progress) {
        if (!data.source().equals("local")) {
            throw new MemfitException((file == null ? "the config" : file.toString()) + ": data.source " + data.source()
                    + ": training reads local shards; stage the bucket's shards first (./memfit cache) and point "
                    + "data.shards.shard_dir at them");
        }
        Path shards = Path.of(data.shardDir());
        // one store for the labels, the tokens' pass and the training: opening checks every shard's row pointers
        try (dev.memfit.shard.ShardStore store = dev.memfit.shard.ShardStore.open(shards)) {
            boolean sparse = store.sparseRows().isPresent();
            List<String> columns = store.cellColumns();
            dev.memfit.sample.Labels labels = null;
            if (columns.contains(training.labelKey())) {
                labels = store.labels(training.labelKey());
            } else if (training.weighted() || training.labelKeyGiven()) {
                throw new MemfitException("training.sampling.label_key is " + training.labelKey() + ", and the cell tables of "
                        + shards + " have no such column; they have " + String.join(", ", columns));
            } else {
                // the default label_key, absent from the cells: pretraining only, said
                progress.note("no cell-type head: the cell tables of " + shards + " have no column "
                        + training.labelKey() + " (they have " + String.join(", ", columns) + ")");
            }
            RankValueTokens tokens;
            try (dev.memfit.data.Loader cells = dev.memfit.data.Datasets.of(store).optSparseBatches(sparse)
                    .optBatchSize(1024).build()) {
                tokens = RankValueTokens.fit(cells, data.geneStrategy().equals("all") ? 0 : data.genes(),
                        tokenizer.maxLength(), progress);
            }
            boolean bf16 = training.bf16() && GeneTransformer.bf16Supported();
            if (training.bf16() && !bf16) {
                // said, not silent: the run is float32, with the memory of float32 activations
                progress.note("training.precision bf16-mixed: this engine (DJL " + ai.djl.engine.Engine.getDjlVersion()
                        + ", PyTorch) cannot hold bfloat16 arrays; training in float32 (32-true) instead");
            }
            // the model's memory, before it is allocated: said, with what to change when it does not fit
            dev.memfit.memory.TransformerShape shape = new dev.memfit.memory.TransformerShape(tokens.vocabularySize(),
                    tokenizer.maxLength(), model.dModel(), model.layers(), model.heads(),
                    labels == null ? 0 : labels.names().size(), GeneTransformer.DEFAULT_MASK_SHARE);
            int bytesPerValue = bf16 ? 2 : 4;
            dev.memfit.memory.MemoryEstimate memory = dev.memfit.memory.MemoryEstimator.builder().setTransformer(shape)
                    .optBatchSize(training.batchSize()).optPrecision(bytesPerValue).build().estimate();
            progress.note(dev.memfit.memory.Advice.transformer(shape, training.batchSize(), training.accumulation(),
                    bytesPerValue, modelMemory(), GeneTransformer.bf16Supported()));
            GeneTransformer.Builder builder = GeneTransformer.builder().setTokens(tokens)
                    .optModel(model.dModel(), model.layers(), model.heads()).optBf16(bf16)
                    .optEpochs(training.epochs()).optGradientAccumulation(training.accumulation())
                    .optPinnedBatches(training.pinMemory()).optProgress(progress);
            if (labels != null) {
                builder.optLabels(labels.codes(), labels.names().size());
            }
            dev.memfit.data.Order order = training.weighted()
                    ? dev.memfit.data.Order.weighted(labels.codes(), 0, training.warmupEpochs())
                    : dev.memfit.data.Order.shuffle(0);
            try (dev.memfit.data.Loader loader = dev.memfit.data.Datasets.of(store).optSparseBatches(sparse)
                    .optBatchSize(training.batchSize()).optOrder(order).build()) {
                if (training.checkpointDir() != null) {
                    // at the end of every epoch (Lightning's default; a shorter last group of batches still steps) and
                    // every 10 minutes within a long one
                    long stepsPerEpoch = Math.max(1, (loader.batchesPerEpoch() + training.accumulation() - 1)
                            / training.accumulation());
                    builder.optCheckpoints(Checkpoints.builder().setFolder(training.checkpointDir())
                            .optEverySteps(stepsPerEpoch).optEveryTime(java.time.Duration.ofMinutes(10)).build());
                }
                GeneTransformer transformer = builder.build();
                try {
                    return new Trained(this, transformer, tokens, labels, memory, transformer.fit(loader));
                } catch (RuntimeException e) {
                    transformer.close();
                    throw e;
                }
            }
        }
    }

    /** The memory the model may take: a GPU's when training runs on one (the trainers' default there), else the RAM left. */
    private static long modelMemory() {
        ai.djl.Device device = Fit.engine().defaultDevice();
        if (device.isGpu()) {
            return ai.djl.util.cuda.CudaUtils.getGpuMemory(device).getMax();
        }
        return dev.memfit.memory.Advice.Machine.current().availableRam();
    }

    /**
     * What a config's run made.
     *
     * @param config the config it ran
     * @param model the trained transformer, closed with this
     * @param tokens the tokenizer it was trained with
     * @param labels the classes of its cell-type head, or null for pretraining only
     * @param memory the estimate of the model's memory at the config's batch and precision, made before it trained
     *               ({@link dev.memfit.memory.MemoryEstimator.Builder#setTransformer}; on the CPU it is this process's memory)
     * @param fit the loop's record of the epochs
     */
    public record Trained(TrainConfig config, GeneTransformer model, RankValueTokens tokens, dev.memfit.sample.Labels labels,
                          dev.memfit.memory.MemoryEstimate memory, FitResult fit) implements AutoCloseable {
        @Override
        public void close() {
            model.close();
        }
    }

    /**
     * The config as YAML with every key, defaults included: what a run used, for its log and checkpoints.
     *
     * @return the YAML text
     */
    public String toYaml() {
        List<String> lines = new ArrayList<>();
        lines.add("data:");
        lines.add("  source: " + data.source());
        lines.add("  shards:");
        lines.add("    enabled: true");
        lines.add("    shard_dir: " + data.shardDir());
        lines.add("  gene_selection:");
        lines.add("    strategy: " + data.geneStrategy());
        lines.add("    n_genes: " + data.genes());
        lines.add("training:");
        lines.add("  batch_size: " + training.batchSize());
        lines.add("  num_epochs: " + training.epochs());
        lines.add("  accumulate_grad_batches: " + training.accumulation());
        lines.add("  precision: " + (training.bf16() ? "bf16-mixed" : "32-true"));
        lines.add("  pin_memory: " + training.pinMemory());
        lines.add("  sampling:");
        lines.add("    strategy: " + (training.weighted() ? "weighted" : "uniform"));
        lines.add("    label_key: " + training.labelKey());
        lines.add("    curriculum_warmup_epochs: " + training.warmupEpochs());
        if (training.checkpointDir() != null) {
            lines.add("  checkpoint_dir: " + training.checkpointDir());
        }
        lines.add("model:");
        lines.add("  architecture: " + model.architecture());
        lines.add("  d_model: " + model.dModel());
        lines.add("  n_layers: " + model.layers());
        lines.add("  n_heads: " + model.heads());
        lines.add("tokenizer:");
        lines.add("  strategy: " + tokenizer.strategy());
        lines.add("  max_length: " + tokenizer.maxLength());
        return String.join("\n", lines) + "\n";
    }
}
