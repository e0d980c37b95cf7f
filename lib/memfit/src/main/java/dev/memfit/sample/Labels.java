package dev.memfit.sample;

import dev.memfit.MemfitException;

import java.util.List;
import java.util.TreeSet;

/**
 * A label column turned into class numbers: names sorted, each value replaced by its name's position.
 *
 * @param codes the class of each sample
 * @param names the class names; {@code names.get(c)} is class c
 */
public record Labels(int[] codes, List<String> names) {

    /**
     * Encodes a column of labels (for example an {@code obs} column of an {@code .h5ad}).
     *
     * @param column the label of each sample
     * @param name the column's name, for messages
     * @return the labels
     * @throws MemfitException naming the first sample without a label
     */
    public static Labels of(String[] column, String name) {
        TreeSet<String> distinct = new TreeSet<>();
        for (int i = 0; i < column.length; i++) {
            if (column[i] == null) {
                throw new MemfitException("label column '" + name + "' has no value for sample " + i);
            }
            distinct.add(column[i]);
        }
        List<String> names = List.copyOf(distinct);
        int[] codes = new int[column.length];
        for (int i = 0; i < codes.length; i++) {
            codes[i] = java.util.Collections.binarySearch(names, column[i]);
        }
        return new Labels(codes, names);
    }

    /**
     * The label of each row of an {@code obs} column as read ({@code AnnData.column}, {@code FrameColumn.labels()}):
     * strings and categories as they are, booleans (say {@code is_doublet}) as the two names numpy prints.
     *
     * @param column the column's label view: a {@code String[]} or a {@code boolean[]}
     * @param source the file or table it comes from, for messages
     * @param name the column's name, for messages
     * @return the label of each row
     * @throws MemfitException when the column holds numbers
     */
    public static String[] namesOf(Object column, String source, String name) {
        if (column instanceof boolean[] flags) {
            String[] names = new String[flags.length];
            for (int i = 0; i < flags.length; i++) {
                names[i] = flags[i] ? "True" : "False";
            }
            return names;
        }
        if (!(column instanceof String[] names)) {
            throw new MemfitException(source + ": obs column '" + name + "' holds numbers; labels are read from a "
                    + "column of strings, categories or booleans");
        }
        return names;
    }

    /**
     * The share of each class.
     *
     * @return fractions by class, summing to 1
     */
    public double[] frequencies() {
        double[] shares = new double[names.size()];
        for (int code : codes) {
            shares[code] += 1.0 / codes.length;
        }
        return shares;
    }
}
