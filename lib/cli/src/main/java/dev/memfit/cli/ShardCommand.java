package dev.memfit.cli;

import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.io.AnnDataFiles;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.storage.Storage;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.shard.GeneVocabulary;
import dev.memfit.shard.ShardLayout;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.concurrent.Callable;

/** {@code memfit shard INPUT.h5ad --output-dir shards/ --shard-size N} and {@code memfit validate shards/}. */
@Command(name = "shard", mixinStandardHelpOptions = true,
        description = "Convert AnnData (.h5ad files, .zarr stores) into memory-mappable shards (CSR or dense .npy + .parquet + shard_metadata.json), out of core; resumes an interrupted run. "
                + "--engine spark converts on Apache Spark (one task per shard), the same folder byte for byte.")
final class ShardCommand implements Callable<Integer> {

    @Parameters(paramLabel = "INPUT", arity = "1..*", description = "the .h5ad files or .zarr stores (folders, .zarr.zip), "
            + "in order: each is cut into shards from its first cell; without --vocab the shards hold the union of their "
            + "genes. Objects in a bucket (s3://bucket/atlas.h5ad, gs://...) are staged whole into the cache of "
            + "MEMFIT_CACHE_DIR first; zarr stores in a bucket (s3://bucket/atlas.zarr) are read chunk by chunk through it")
    private List<Path> inputs;

    @Option(names = "--engine", defaultValue = "local", description = "local (this process, resumable) or spark (Apache "
            + "Spark: ./memfit puts its jars and flags on the class path; options --master local[*] and --conf KEY=VALUE)")
    private String engine;

    @Option(names = "--output-dir", required = true)
    private Path output;

    @Option(names = "--shard-size", defaultValue = "100000", description = "cells per shard (default ${DEFAULT-VALUE})")
    private long shardSize;

    @Option(names = "--vocab", description = "a JSON array of gene names: the columns of every shard")
    private Path vocabulary;

    @Option(names = "--layout", description = "dense or sparse (CSR: values, gene indices, row pointers; about the "
            + "source's size on disk); default: sparse for a sparse X, dense for a dense X")
    private String layout;

    @Option(names = "--layer", defaultValue = "X", description = "the matrix read: X (default), raw/X (raw counts, with "
            + "the genes of raw/var), or a layer such as counts (layers/counts)")
    private String layer;

    @Option(names = "--top-genes", description = "use the n genes with the largest total counts as the vocabulary")
    private Integer topGenes;

    @Option(names = "--dtype", paramLabel = "TYPE", description = "the type of the shards' values: default the "
            + "source's (float64 for a float64 X, each value kept exactly; float32 otherwise, and an integer X with a value "
            + "float32 would round, 2^24 or more, is refused: give float64); float32 casts a float64 X "
            + "(half the disk; values below float32's range become 0), as the output and the metadata say")
    private String dtype;

    @Override
    public Integer call() {
        if (engine.equals("spark")) {
            throw new MemfitException("--engine spark runs through ./memfit shard --engine spark, which puts Spark's jars "
                    + "(lib/spark/target/classpath.txt) and its JVM flags on the class path; this JVM has neither");
        }
        if (!engine.equals("local")) {
            throw new MemfitException("--engine: expected local or spark, found '" + engine + "'");
        }
        if (topGenes != null && inputs.size() > 1) {
            throw new MemfitException("--top-genes ranks the genes of one file; with " + inputs.size()
                    + " files give the genes with --vocab");
        }
        if (inputs.stream().noneMatch(in -> ObjectUri.isObject(in.toString()))) {
            return convert(inputs, Map.of(), null);
        }
        // objects in a bucket: staged whole (verified) into the cache of the environment, then converted as local files
        try (ObjectCache cache = ObjectCache.fromEnvironment()) {
            List<Path> local = new ArrayList<>();
            List<ObjectCache.Pin> pins = new ArrayList<>();
            Map<Path, ObjectUri> uris = new java.util.LinkedHashMap<>();
            Map<Path, String[]> versions = new java.util.LinkedHashMap<>();
            try {
                for (Path in : inputs) {
                    if (!ObjectUri.isObject(in.toString())) {
                        local.add(in);
                        continue;
                    }
                    ObjectUri uri = ObjectUri.of(in);
                    if (AnnDataFiles.isZarrName(uri.key())) {
                        // a zarr store: read chunk by chunk through the cache, recorded by its listing's version
                        AnnDataFiles.Version version = AnnDataFiles.version(cache, uri);
                        System.out.printf("reading %s (%.1f MB) through %s%n", uri, version.bytes() / 1e6, cache.folder());
                        local.add(uri.toPath());
                        versions.put(uri.toPath(), new String[]{uri.toString(), version.modified(),
                                Long.toString(version.bytes())});
                        continue;
                    }
                    ObjectCache.PinnedObject pinned = cache.stagePinned(uri);
                    pins.add(pinned.pin());
                    ObjectCache.StagedObject staged = pinned.staged();
                    System.out.printf("staged %s (%.1f MB, %s) in %s%n", uri, staged.info().size() / 1e6,
                            staged.etagChecked() ? "MD5 matches the ETag" : "blocks checked with CRC32C", cache.folder());
                    local.add(staged.file());
                    uris.put(staged.file(), uri);
                    versions.put(staged.file(), new String[]{uri.toString(), staged.info().etag()});
                }
                try {
                    return convert(local, versions, cache);
                } catch (RuntimeException e) {
                    // a reader's error names the staged copy: name the object instead
                    RuntimeException named = e;
                    for (Map.Entry<Path, ObjectUri> copy : uris.entrySet()) {
                        named = ObjectCache.aboutObject(named, copy.getKey(), copy.getValue());
                    }
                    throw named;
                }
            } finally {
                pins.forEach(ObjectCache.Pin::close);
            }
        }
    }

    /**
     * Converts local files and stores; {@code objects} names the staged copies among them by address and ETag, and the
     * zarr stores in a bucket (read through {@code storage}) by address, version and bytes.
     */
    private Integer convert(List<Path> inputs, Map<Path, String[]> objects, Storage storage) {
        Path input = inputs.getFirst();
        boolean existed = Files.exists(output);
        boolean fresh = !existed || isEmptyFolder(output);
        ShardWriter.Result result;
        try {
            // locked up front: a second run fails at once, before --top-genes reads the whole matrix
            try (OutputLock lock = OutputLock.acquireFolder(output)) {
                GeneVocabulary genes = null;
                if (vocabulary != null) {
                    genes = GeneVocabulary.read(vocabulary);
                } else if (topGenes != null) {
                    try (AnnData h5ad = AnnDataFiles.builder().setFile(input)
                            .optStorage(ObjectUri.isObject(input.toString()) ? storage : null).optLayer(layer).open()) {
                        genes = GeneVocabulary.topByTotalCounts(h5ad, topGenes);
                    }
                }
                ShardWriter.Builder writer = ShardWriter.builder().setInputs(inputs).optShardSize(shardSize)
                        .optVocabulary(genes).optLayout(layout == null ? null : ShardLayout.of(layout)).optLayer(layer)
                        .optDType(dtype(dtype)).optStorage(storage);
                objects.forEach((copy, named) -> {
                    if (named.length > 2) {
                        writer.optSource(copy, named[0], named[1], Long.parseLong(named[2]));
                    } else {
                        writer.optSource(copy, named[0], named[1]);
                    }
                });
                result = writer.write(output);
            }
        } catch (RuntimeException | Error e) {
            if (fresh) {
                // the lock is released by now: only what the run itself left is looked at
                removeIfNothingDone(output, !existed);
            }
            throw e;
        }
        if (result.startedOver() != null) {
            System.out.println("the shards already in " + output + " were not kept: " + result.startedOver());
        }
        for (String shard : result.repaired()) {
            System.out.println("repaired " + shard);
        }
        if (!result.removed().isEmpty()) {
            System.out.println("removed " + result.removed().size() + " stale file(s): " + String.join(", ", result.removed()));
        }
        if (!result.foreign().isEmpty()) {
            System.out.println("warning: " + String.join(", ", result.foreign()) + " in " + output
                    + " are not part of the shard set; memfit validate rejects the folder until they are moved out");
        }
        try (ShardStore store = ShardStore.open(output)) {
            System.out.printf("%d %s shards (%d written now) of %,d cells x %,d genes in %s, %.1f MB%s%n", result.shards(),
                    result.layout().key(), result.written(), result.cells(), result.genes(), output, store.storedBytes() / 1e6,
                    result.dtype() == DType.FLOAT64 ? ", float64 values" : "");
        }
        if (result.castFrom() != null) {
            System.out.println("values cast from " + name(result.castFrom()) + " to " + name(result.dtype())
                    + " (--dtype " + name(result.dtype()) + "); recorded in " + ShardWriter.METADATA);
        }
        return 0;
    }

    /**
     * The type {@code --dtype} names.
     *
     * @param name float32, float64, or null for the source's
     * @return the type, or null
     */
    static DType dtype(String name) {
        if (name == null) {
            return null;
        }
        return switch (name.toLowerCase(java.util.Locale.ROOT)) {
            case "float32", "f4" -> DType.FLOAT32;
            case "float64", "f8" -> DType.FLOAT64;
            default -> throw new MemfitException("--dtype: expected float32 or float64, found '" + name + "'");
        };
    }

    private static String name(DType type) {
        return type.name().toLowerCase(java.util.Locale.ROOT);
    }

    /**
     * After a failed first run into a new or empty folder: when no shard was finished (the input was refused before
     * its first shard), the folder holds only the resume metadata, which would promise a resumable conversion of an
     * input that cannot be read; remove it, and the folder when this run created it. Finished shards are kept: a
     * re-run resumes after them.
     */
    private static void removeIfNothingDone(Path folder, boolean created) {
        try (Stream<Path> files = Files.list(folder)) {
            if (files.allMatch(file -> file.getFileName().toString().equals(ShardWriter.METADATA))) {
                Files.deleteIfExists(folder.resolve(ShardWriter.METADATA));
                if (created) {
                    Files.deleteIfExists(folder);
                }
            }
        } catch (IOException ignored) {
            // best effort after a failure: the failure is what gets reported
        }
    }

    private static boolean isEmptyFolder(Path folder) {
        try (Stream<Path> files = Files.list(folder)) {
            return files.findAny().isEmpty();
        } catch (IOException e) {
            return false;   // not a folder, or not readable: the writer reports it
        }
    }

    /** {@code memfit validate DIR}. */
    @Command(name = "validate", mixinStandardHelpOptions = true,
            description = "Check a shard folder: metadata, shapes, CRC32C of every file, CSR row pointers and gene indices, cell tables.")
    static final class Validate implements Callable<Integer> {
        @Parameters(paramLabel = "DIR")
        private Path folder;

        @Override
        public Integer call() {
            ShardStore.validate(folder);
            try (ShardStore store = ShardStore.open(folder)) {
                System.out.printf("%s: valid, %d %s shards, %,d cells x %,d genes, %s, %.1f MB%n", folder,
                        store.shardSizes().length, store.layout().key(), store.size(), store.vocabulary().genes().size(),
                        name(store.dtype()) + (store.castFrom() == null ? "" : " (cast from " + name(store.castFrom()) + ")"),
                        store.storedBytes() / 1e6);
            }
            return 0;
        }
    }
}
