package dev.memfit.shard;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.anndata.FrameColumn;
import dev.memfit.io.AnnDataFiles;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.storage.Storage;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * A conversion of one or many AnnData files ({@code .h5ad}, {@code .zarr} folders, {@code .zarr.zip}) into shards,
 * planned once: the inputs in the given order, each cut
 * into shards of {@code shardSize} cells from its first cell (so a shard never holds cells of two files, and its cell
 * table has that file's {@code obs} columns), numbered across the inputs; the vocabulary, the layout and the type of
 * the values (the source's: float64 for a float64 X, float32 otherwise; or a cast, {@link Builder#optDType}). The plan is
 * {@link Serializable} so that an engine can send it to workers: each writes some shards with {@link #open(int)} and
 * {@link Input#write}, the one encoding {@link ShardWriter} uses, and the caller writes the metadata last with
 * {@link #writeMetadata}. The folder is then byte for byte what {@link ShardWriter} writes from the same plan.
 */
public final class ShardPlan implements Serializable {

    private static final long serialVersionUID = 2L;

    /** The metadata key of the type the values were cast from. */
    static final String CAST_FROM = "cast_from";

    private final String[] inputs;
    private final long[] inputCells;
    private final long[] inputBytes;
    private final String[] inputModified;
    /** What the metadata records of each input: its path, or the address of the object it is a staged copy of. */
    private final String[] sourceNames;
    /** The key of {@link #inputModified} in the metadata: {@code modified}, or {@code etag} for an object. */
    private final String[] versionKeys;
    private final long shardSize;
    private final List<String> vocabulary;
    private final ShardLayout layout;
    /** The type of the shards' values, and the inputs' (float64 when any input's X is float64). */
    private final DType dtype;
    private final DType sourceType;
    /** The matrix converted: X, raw/X or layers/NAME. */
    private final String layer;
    /** Reads the inputs that are zarr stores in a bucket; not sent to workers (they read local or shared files). */
    private final transient Storage storage;
    /** Per shard: its input, its first row there and its cells. */
    private final int[] shardInput;
    private final long[] shardFirst;
    private final long[] shardCells;

    private ShardPlan(Builder settings, ShardLayout layout, List<String> vocabulary, long[] inputCells, DType dtype,
                      DType sourceType) {
        int n = settings.inputs.size();
        this.inputs = new String[n];
        this.inputBytes = new long[n];
        this.inputModified = new String[n];
        this.sourceNames = new String[n];
        this.versionKeys = new String[n];
        this.storage = settings.storage;
        for (int i = 0; i < n; i++) {
            Path input = settings.inputs.get(i);
            boolean object = isObject(input);
            inputs[i] = object ? input.toString() : input.toAbsolutePath().toString();
            String[] named = settings.sources.get(input);
            if (named != null && named.length > 2) {
                // a store read through a storage (a bucket): its version as the caller found it
                inputBytes[i] = Long.parseLong(named[2]);
                inputModified[i] = named[1];
            } else if (object) {
                throw new MemfitException(input + ": an input in a bucket needs its version: optSource(input, address, "
                        + "version, bytes)");
            } else {
                // a source rewritten since (same name, new contents) must not resume onto the old shards
                AnnDataFiles.Version version = AnnDataFiles.version(input);
                inputBytes[i] = version.bytes();
                inputModified[i] = named != null ? named[1] : version.modified();
            }
            sourceNames[i] = named != null ? named[0] : inputs[i];
            versionKeys[i] = named != null ? "etag" : "modified";
        }
        this.inputCells = inputCells;
        this.shardSize = settings.shardSize;
        this.vocabulary = List.copyOf(vocabulary);
        this.layout = layout;
        this.dtype = dtype;
        this.sourceType = sourceType;
        this.layer = settings.layer;
        long total = 0;
        for (long cells : inputCells) {
            total += Math.ceilDiv(cells, shardSize);
        }
        if (total > Integer.MAX_VALUE) {
            throw new MemfitException(Arrays.stream(inputCells).sum() + " cells in shards of " + shardSize
                    + " would make " + total + " shards; raise optShardSize");
        }
        this.shardInput = new int[(int) total];
        this.shardFirst = new long[(int) total];
        this.shardCells = new long[(int) total];
        int s = 0;
        for (int i = 0; i < n; i++) {
            for (long first = 0; first < inputCells[i]; first += shardSize, s++) {
                shardInput[s] = i;
                shardFirst[s] = first;
                shardCells[s] = Math.min(shardSize, inputCells[i] - first);
            }
        }
    }

    /**
     * Starts planning a conversion: {@code setInputs} is required; defaults are 100,000 cells per shard, the genes of
     * the inputs as the vocabulary and the layout of their X.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Configures a plan ({@link ShardSettings}, progress silent by default); {@link #plan()} opens every input, checks
     * it and the settings, and plans the shards.
     */
    public static final class Builder extends ShardSettings<Builder> {

        private Builder() {
            super(ProgressListener.silent());
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Opens every input, checks it against the settings and plans the shards; nothing is written.
         *
         * @return the plan
         * @throws MemfitException naming the setting to change, or the input that cannot be converted and why
         */
        public ShardPlan plan() {
            if (inputs == null || inputs.isEmpty()) {
                throw new MemfitException("setInputs(files) is required: the .h5ad file(s) or .zarr store(s) to convert");
            }
            if (inputs.contains(null)) {
                throw new MemfitException("setInputs(files): input " + inputs.indexOf(null) + " is null; give every file");
            }
            if (shardSize < 1) {
                throw new MemfitException("shard size must be at least 1 cell, got " + shardSize
                        + "; set optShardSize (--shard-size on the command line)");
            }
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
            if (vocabulary != null && vocabulary.genes().isEmpty()) {
                throw new MemfitException("optVocabulary: an empty vocabulary (--vocab [] on the command line) gives "
                        + "cells without a single gene; list at least one gene, or leave it out to keep the input's genes");
            }
            if (dtype != null && dtype != DType.FLOAT32 && dtype != DType.FLOAT64) {
                throw new MemfitException("optDType(" + dtype + "): shards hold FLOAT32 or FLOAT64 values (--dtype "
                        + "float32 or float64 on the command line)");
            }
            DType sourceType = DType.FLOAT32;
            long[] cells = new long[inputs.size()];
            List<String[]> inputGenes = new ArrayList<>();
            boolean anySparse = false;
            for (int i = 0; i < inputs.size(); i++) {
                Path input = inputs.get(i);
                try (AnnData h5ad = open(input, storage, layer, progress)) {
                    layer = h5ad.layer();
                    anySparse |= h5ad.sparse();
                    if (h5ad.floatType() == DType.FLOAT64) {
                        sourceType = DType.FLOAT64;
                    }
                    inputGenes.add(h5ad.index("var"));
                    // a column the cell tables cannot carry is refused now, before any shard is written
                    if (h5ad.frameColumns("obs").containsKey(CellTable.CELL_ID)) {
                        throw new MemfitException(input + ": obs has a column '" + CellTable.CELL_ID + "', the name of the "
                                + "cell tables' column of cell names; rename it in anndata and write the file again");
                    }
                    cells[i] = h5ad.observations();
                    if (cells[i] == 0) {
                        throw new InvalidFileException(input, -1, "at least one cell to shard", "n_obs = 0 (X of shape [0, "
                                + h5ad.variables() + "])");
                    }
                }
            }
            // sparse X stays sparse; dense X stays dense (it was stored dense, so it is not known to be sparse, and
            // CSR costs 8 bytes per stored value against 4: it pays only below 50% non-zero)
            ShardLayout chosen = layout != null ? layout : anySparse ? ShardLayout.SPARSE : ShardLayout.DENSE;
            // each file's genes must be unique, with or without a vocabulary: a name twice would map two columns
            // onto one gene (summed from CSR, the last one kept from dense rows)
            LinkedHashSet<String> union = new LinkedHashSet<>();
            for (int i = 0; i < inputs.size(); i++) {
                union.addAll(fileGenes(inputs.get(i), inputGenes.get(i)).genes());
            }
            List<String> genes = vocabulary != null ? vocabulary.genes() : List.copyOf(union);
            GeneVocabulary checked = new GeneVocabulary(genes);
            for (int i = 0; i < inputs.size(); i++) {
                String[] names = inputGenes.get(i);
                if (names.length > 0 && Arrays.stream(checked.positionsOf(names)).allMatch(p -> p < 0)) {
                    throw new MemfitException("none of the " + genes.size() + " genes of the vocabulary (" + sample(genes)
                            + ") is among the " + names.length + " genes of " + inputs.get(i) + " (" + sample(Arrays.asList(names))
                            + "): every cell would be empty; give a vocabulary (--vocab) with the file's gene names (its var index)");
                }
            }
            return new ShardPlan(this, chosen, genes, cells, dtype != null ? dtype : sourceType, sourceType);
        }
    }

    /** A file's genes as a vocabulary, or why not, naming the file and what to do. */
    private static GeneVocabulary fileGenes(Path input, String[] names) {
        try {
            return new GeneVocabulary(Arrays.asList(names));
        } catch (MemfitException e) {
            throw new MemfitException(input + ": var (the genes) names a gene twice, " + e.getMessage()
                    .replace("a gene vocabulary cannot list a gene twice: ", "") + "; shards map genes by name: make the "
                    + "names unique in anndata (adata.var_names_make_unique()) and write the file again", e);
        }
    }

    /**
     * The number of shards of all inputs.
     *
     * @return shards
     */
    public int shards() {
        return shardInput.length;
    }

    /**
     * The inputs, in order.
     *
     * @return absolute paths
     */
    public List<Path> inputs() {
        return Arrays.stream(inputs).map(Path::of).toList();
    }

    /**
     * The input a shard's cells come from.
     *
     * @param shard the shard number
     * @return its index in {@link #inputs()}
     */
    public int input(int shard) {
        return shardInput[shard];
    }

    /**
     * The first row of a shard in its input.
     *
     * @param shard the shard number
     * @return the row
     */
    public long firstRow(int shard) {
        return shardFirst[shard];
    }

    /**
     * The cells of a shard.
     *
     * @param shard the shard number
     * @return cells, at most the shard size
     */
    public long cells(int shard) {
        return shardCells[shard];
    }

    /**
     * The cells of all inputs.
     *
     * @return cells
     */
    public long cells() {
        return Arrays.stream(inputCells).sum();
    }

    /**
     * The shards' genes.
     *
     * @return the vocabulary
     */
    public GeneVocabulary vocabulary() {
        return new GeneVocabulary(vocabulary);
    }

    /**
     * How the shards store their cells.
     *
     * @return the layout
     */
    public ShardLayout layout() {
        return layout;
    }

    /**
     * The type of the shards' values.
     *
     * @return {@code FLOAT32} or {@code FLOAT64}
     */
    public DType dtype() {
        return dtype;
    }

    /**
     * The type the inputs' values were cast from, when the shards hold a narrower one: {@code FLOAT64} for float64
     * inputs sharded as float32 ({@link Builder#optDType}).
     *
     * @return {@code FLOAT64}, or null when the shards hold the source's values exactly
     */
    public DType castFrom() {
        return sourceType == DType.FLOAT64 && dtype == DType.FLOAT32 ? DType.FLOAT64 : null;
    }

    /**
     * What the metadata records of an input: its path, or the address of the object it is a staged copy of.
     *
     * @param input its index in {@link #inputs()}
     * @return the path or address
     */
    public String sourceName(int input) {
        return sourceNames[input];
    }

    /**
     * The matrix of the inputs converted.
     *
     * @return {@code X}, {@code raw/X} or {@code layers/NAME}
     */
    public String layer() {
        return layer;
    }

    /**
     * The largest number of cells in a shard.
     *
     * @return the shard size
     */
    public long shardSize() {
        return shardSize;
    }

    /**
     * Opens one input to write its shards, with silent progress.
     *
     * @param input its index in {@link #inputs()}
     * @return the open input; close it when its shards are written
     */
    public Input open(int input) {
        return open(input, ProgressListener.silent());
    }

    Input open(int input, ProgressListener listener) {
        return new Input(input, open(Path.of(inputs[input]), storage, layer, listener));
    }

    /** Whether an input is an object in a bucket, by its path form ({@code s3:/bucket/atlas.zarr}). */
    private static boolean isObject(Path input) {
        return ObjectUri.isObject(input.toString());
    }

    /** Opens an input: a local file or store, or a store in a bucket through the plan's storage. */
    private static AnnData open(Path input, Storage storage, String layer, ProgressListener listener) {
        boolean object = isObject(input);
        if (object && storage == null) {
            throw new MemfitException(input + ": an input in a bucket is read through an object cache; give it with "
                    + "optStorage(cache) (this plan was sent elsewhere, or built without one)");
        }
        return AnnDataFiles.builder().setFile(input).optStorage(object ? storage : null).optLayer(layer)
                .optProgress(listener).open();
    }

    /**
     * One input open for writing its shards: the reader, its {@code obs} table and the working memory of one chunk of
     * rows (allocated at the first shard). Not thread-safe: one per thread.
     */
    public final class Input implements AutoCloseable {

        private final int index;
        private final AnnData h5ad;
        private final int[] positions;
        private final Arena arena = Arena.ofConfined();
        private Map<String, FrameColumn> obs;
        private String[] barcodes;
        private ShardWriter.Buffers buffers;

        private Input(int index, AnnData h5ad) {
            this.index = index;
            this.h5ad = h5ad;
            this.positions = new GeneVocabulary(vocabulary).positionsOf(h5ad.index("var"));
        }

        /**
         * The input this is.
         *
         * @return its index in {@link #inputs()}
         */
        public int index() {
            return index;
        }

        /**
         * Writes one shard of this input into a folder: its array files and cell table, each under a temporary name
         * renamed when complete; the metadata is the caller's ({@link #writeMetadata}).
         *
         * @param shard the shard number, one of this input's
         * @param folder the folder
         * @param progress told of each chunk of cells written
         * @return the shard's files with their sizes and checksums
         */
        public WrittenShard write(int shard, Path folder, ProgressListener.Task progress) {
            if (shardInput[shard] != index) {
                throw new MemfitException("shard " + shard + " is of input " + shardInput[shard] + " (" + inputs[shardInput[shard]]
                        + "), not of input " + index + " (" + inputs[index] + ")");
            }
            prepare();
            return ShardWriter.writeShard(Path.of(inputs[index]), folder, shard, h5ad, new GeneVocabulary(vocabulary),
                    positions, layout, shardFirst[shard], shardCells[shard], obs, barcodes, buffers, progress);
        }

        /**
         * Reads what every shard of this input needs (done by the first {@link #write} otherwise): transposes a CSC X
         * to CSR (its progress to the listener the input was opened with), reads the {@code obs} table and allocates
         * the working memory.
         */
        public void prepare() {
            if (buffers == null) {
                h5ad.prepareRows();
                obs = h5ad.frameColumns("obs");
                barcodes = h5ad.index("obs");
                buffers = new ShardWriter.Buffers(arena, h5ad, vocabulary.size(), layout, dtype);
            }
        }

        @Override
        public void close() {
            try (h5ad) {
                arena.close();
            }
        }
    }

    /**
     * One file of a written shard, as the metadata lists it.
     *
     * @param role "x" (dense), "data", "indices", "indptr" (sparse) or "metadata" (the cell table)
     * @param file the file name in the folder
     * @param bytes its size
     * @param crc32c the CRC32C of all its bytes
     */
    public record ShardFile(String role, String file, long bytes, long crc32c) implements Serializable {
    }

    /**
     * A shard as written: what the metadata lists for it.
     *
     * @param shard the shard number
     * @param cells its cells
     * @param nnz its stored values (sparse), -1 for a dense shard
     * @param files its files, the cell table last
     */
    public record WrittenShard(int shard, long cells, long nnz, List<ShardFile> files) implements Serializable {

        /** Validates and copies the file list. */
        public WrittenShard {
            files = List.copyOf(files);
        }

        ObjectNode toJson() {
            ObjectNode entry = ShardWriter.JSON.createObjectNode();
            if (nnz < 0) {
                entry.put("file", files.getFirst().file());
            } else {
                entry.put("nnz", nnz);
            }
            entry.put("metadata", files.getLast().file());
            entry.put("cells", cells);
            ArrayNode list = ShardWriter.JSON.createArrayNode();
            for (ShardFile file : files) {
                ObjectNode item = ShardWriter.JSON.createObjectNode();
                item.put("role", file.role());
                item.put("file", file.file());
                item.put("bytes", file.bytes());
                item.put("crc32c", file.crc32c());
                list.add(item);
            }
            entry.set("files", list);
            return entry;
        }
    }

    /**
     * The metadata of this conversion with no shard listed and {@code complete: false}: what a folder being written
     * holds, and what an earlier run's metadata is compared with to resume.
     */
    ObjectNode freshMetadata() {
        ObjectNode metadata = ShardWriter.JSON.createObjectNode();
        metadata.put("format_version", ShardWriter.FORMAT_VERSION);
        metadata.put("layout", layout.key());
        if (!layer.equals("X")) {
            // only when it is not X: folders written before layers existed still resume
            metadata.put("layer", layer);
        }
        if (inputs.length == 1) {
            metadata.put("source", sourceNames[0]);
            metadata.put("source_bytes", inputBytes[0]);
            metadata.put("source_" + versionKeys[0], inputModified[0]);
        } else {
            ArrayNode sources = ShardWriter.JSON.createArrayNode();
            for (int i = 0; i < inputs.length; i++) {
                ObjectNode source = ShardWriter.JSON.createObjectNode();
                source.put("file", sourceNames[i]);
                source.put("bytes", inputBytes[i]);
                source.put(versionKeys[i], inputModified[i]);
                source.put("cells", inputCells[i]);
                sources.add(source);
            }
            metadata.set("sources", sources);
        }
        metadata.put("cells", cells());
        metadata.put("shard_size", shardSize);
        metadata.put("dtype", dtype == DType.FLOAT64 ? "float64" : "float32");
        if (castFrom() != null) {
            // only for a cast: folders of float32 sources written before dtypes were kept still resume
            metadata.put(CAST_FROM, "float64");
        }
        metadata.put("complete", false);
        metadata.set("vocabulary", ShardWriter.JSON.valueToTree(vocabulary));
        metadata.set("shards", ShardWriter.JSON.createArrayNode());
        return metadata;
    }

    /**
     * Writes the folder's metadata for a complete set (temporary name, then renamed): the last step of a conversion
     * whose shards were written elsewhere, after every one of them.
     *
     * @param folder the shard folder
     * @param written every shard of the plan, in any order
     * @throws MemfitException when a shard is missing or listed twice
     */
    public void writeMetadata(Path folder, List<WrittenShard> written) {
        WrittenShard[] byNumber = new WrittenShard[shards()];
        for (WrittenShard shard : written) {
            if (byNumber[shard.shard()] != null) {
                throw new MemfitException("shard " + shard.shard() + " was written twice");
            }
            byNumber[shard.shard()] = shard;
        }
        ObjectNode metadata = freshMetadata();
        ArrayNode listed = (ArrayNode) metadata.get("shards");
        for (int s = 0; s < byNumber.length; s++) {
            if (byNumber[s] == null) {
                throw new MemfitException("shard " + s + " of " + byNumber.length + " was not written");
            }
            listed.add(byNumber[s].toJson());
        }
        metadata.put("complete", true);
        try {
            ShardWriter.writeAtomically(folder.resolve(ShardWriter.METADATA), metadata);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + folder.resolve(ShardWriter.METADATA), e);
        }
    }

    /** The first few names of a list, for messages. */
    static String sample(List<String> names) {
        return String.join(", ", names.subList(0, Math.min(3, names.size()))) + (names.size() > 3 ? ", ..." : "");
    }
}
