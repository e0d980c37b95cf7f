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
