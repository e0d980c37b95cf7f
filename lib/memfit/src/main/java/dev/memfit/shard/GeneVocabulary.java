package dev.memfit.shard;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.MemfitException;
import dev.memfit.io.anndata.AnnData;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * A fixed, ordered list of genes that every input is mapped onto, so that shards made from different files agree
 * column by column.
 *
 * @param genes the gene names, in vocabulary order
 */
public record GeneVocabulary(List<String> genes) {

    /**
     * Validates the list: no duplicates.
     *
     * @param genes the gene names
     */
    public GeneVocabulary {
        genes = List.copyOf(genes);
        if (genes.stream().distinct().count() != genes.size()) {
            java.util.Map<String, Integer> first = new java.util.HashMap<>();
            long repeated = 0;
            String example = null;
            for (int i = 0; i < genes.size(); i++) {
                Integer seen = first.putIfAbsent(genes.get(i), i);
                if (seen != null) {
                    repeated++;
                    if (example == null) {
                        example = "'" + genes.get(i) + "' at positions " + seen + " and " + i;
                    }
                }
            }
            throw new MemfitException("a gene vocabulary cannot list a gene twice: " + example
                    + (repeated > 1 ? " (" + repeated + " names repeat an earlier one)" : ""));
        }
    }

    /**
     * All genes of a file, in its {@code var} order.
     *
     * @param h5ad the file
     * @return the vocabulary
     */
    public static GeneVocabulary fromVar(AnnData h5ad) {
        return new GeneVocabulary(Arrays.asList(h5ad.index("var")));
    }

    /**
     * The {@code n} genes with the largest total counts, in decreasing order of total (ties by name), computed by one
     * streaming pass over X.
     *
     * @param h5ad the file
     * @param n how many genes, at least 1 (all genes when larger than n_vars)
     * @return the vocabulary
     * @throws MemfitException when n is below 1
     */
    public static GeneVocabulary topByTotalCounts(AnnData h5ad, int n) {
        if (n < 1) {
            throw new MemfitException("topByTotalCounts(h5ad, n) needs n >= 1 genes (--top-genes on the command line), got "
                    + n + ": shards without genes hold nothing");
        }
        double[] totals = columnTotals(h5ad);
        String[] names = h5ad.index("var");
        int[] order = IntStream.range(0, names.length).boxed()
                .sorted(Comparator.<Integer>comparingDouble(g -> -totals[g]).thenComparing(g -> names[g]))
                .mapToInt(Integer::intValue).limit(Math.min(n, names.length)).toArray();
        return new GeneVocabulary(Arrays.stream(order).mapToObj(g -> names[g]).toList());
    }

    /**
     * The sum of each gene over all cells, in float64 from the stored values ({@link AnnData#columnSums()}: CSR values
     * are never densified, float64 data never rounded to float32).
     *
     * @param h5ad the file
     * @return one total per gene, in var order
     */
    public static double[] columnTotals(AnnData h5ad) {
        return h5ad.columnSums();
    }

    /**
     * The vocabulary position of each of an input's genes.
     *
     * @param inputGenes the input's gene names, in its column order
     * @return for each input column, its vocabulary position, or -1 when the gene is not in the vocabulary
     */
    public int[] positionsOf(String[] inputGenes) {
        Map<String, Integer> position = new HashMap<>();
        for (int i = 0; i < genes.size(); i++) {
            position.put(genes.get(i), i);
        }
        return Arrays.stream(inputGenes).mapToInt(gene -> position.getOrDefault(gene, -1)).toArray();
    }

    /**
     * Maps rows of an input onto the vocabulary: genes the input lacks are 0, genes outside the vocabulary dropped.
     *
     * @param rows {@code count} rows of the input's genes, float32
     * @param count the number of rows
     * @param positions from {@link #positionsOf(String[])}
     * @param into {@code count} rows of vocabulary size, float32; overwritten
     */
    public void project(MemorySegment rows, int count, int[] positions, MemorySegment into) {
        long size = genes.size();
        into.asSlice(0, count * size * Float.BYTES).fill((byte) 0);
        for (int r = 0; r < count; r++) {
            for (int g = 0; g < positions.length; g++) {
                if (positions[g] >= 0) {
                    into.setAtIndex(ValueLayout.JAVA_FLOAT, r * size + positions[g],
                            rows.getAtIndex(ValueLayout.JAVA_FLOAT, (long) r * positions.length + g));
                }
            }
        }
    }

    /**
     * Maps rows of an input onto the vocabulary, as {@link #project(MemorySegment, int, int[], MemorySegment)}, in a
     * float type.
     *
     * @param rows {@code count} rows of the input's genes, of {@code type}
     * @param count the number of rows
     * @param positions from {@link #positionsOf(String[])}
     * @param into {@code count} rows of vocabulary size, of {@code type}; overwritten
     * @param type {@code FLOAT32} or {@code FLOAT64}
     */
    public void project(MemorySegment rows, int count, int[] positions, MemorySegment into, dev.memfit.DType type) {
        if (type == dev.memfit.DType.FLOAT32) {
            project(rows, count, positions, into);
            return;
        }
        if (type != dev.memfit.DType.FLOAT64) {
            throw new IllegalArgumentException("rows are projected as FLOAT32 or FLOAT64, not " + type);
        }
        long size = genes.size();
        into.asSlice(0, count * size * Double.BYTES).fill((byte) 0);
        for (int r = 0; r < count; r++) {
            for (int g = 0; g < positions.length; g++) {
                if (positions[g] >= 0) {
                    into.setAtIndex(ValueLayout.JAVA_DOUBLE, r * size + positions[g],
                            rows.getAtIndex(ValueLayout.JAVA_DOUBLE, (long) r * positions.length + g));
                }
            }
        }
    }

    /**
     * Writes the vocabulary as a JSON array of gene names.
     *
     * @param file the output
     */
    public void write(Path file) {
        try {
            Files.writeString(file, new ObjectMapper().writeValueAsString(genes));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    /**
     * Reads a vocabulary written by {@link #write(Path)} (or any JSON array of names).
     *
     * @param file the file
     * @return the vocabulary
     */
    public static GeneVocabulary read(Path file) {
        try {
            String[] names = new ObjectMapper().readValue(file.toFile(), String[].class);
            return new GeneVocabulary(Arrays.asList(names));
        } catch (IOException e) {
            throw new MemfitException(file + ": expected a JSON array of gene names: " + e.getMessage(), e);
        }
    }
}
