package dev.memfit.io.anndata;

import dev.memfit.InvalidFileException;

import java.nio.file.Path;

/**
 * The checks every AnnData reader makes on a dataframe column once it has read its arrays, whatever the format: the
 * same encodings ({@code categorical}, {@code nullable-integer}, {@code nullable-boolean}) are refused or accepted the
 * same way, with the same messages, naming the store and the column. Plumbing shared by the readers in
 * {@code io.hdf5} and {@code io.zarr}, public only for that; not a user API.
 */
public final class AnnDataColumns {

    /** What memfit carries, for the messages that refuse a column. */
    public static final String CARRIED = "a column anndata writes (integers, float32, float64, bool or strings as a 1-D "
            + "array or string-array; categorical; nullable-integer; nullable-boolean)";

    /** The advice that ends a refusal. */
    public static final String CONVERT = "; convert or drop that column in anndata and write the file again";

    private AnnDataColumns() {
    }

    /**
     * A categorical column from its codes and categories, checked: signed integer codes, each in
     * {@code [-1, categories)}, string or numeric categories.
     *
     * @param location the store, for messages
     * @param path the column, such as {@code /obs/cell_type}
     * @param codes the codes as read
     * @param categories the categories as read
     * @param ordered whether the categories are ordered
     * @return the column
     * @throws InvalidFileException naming what is wrong
     */
    public static FrameColumn categorical(Path location, String path, FrameColumn codes, FrameColumn categories,
                                          boolean ordered) {
        if (!(codes instanceof FrameColumn.Numbers numbers) || !numbers.isInteger() || numbers.isUnsigned()) {
            throw new InvalidFileException(location, -1, "signed integer codes of the categorical " + path,
                    codes.typeName() + CONVERT);
        }
        if (!(categories instanceof FrameColumn.Strings) && !(categories instanceof FrameColumn.Numbers)) {
            throw new InvalidFileException(location, -1, "string or numeric categories of the categorical " + path,
                    categories.typeName() + " categories" + CONVERT);
        }
        for (int i = 0; i < numbers.size(); i++) {
            long code = numbers.longAt(i);
            if (code < -1 || code >= categories.size()) {
                throw new InvalidFileException(location, -1, "codes of the categorical " + path + " in [-1, " + categories.size()
                        + ") (" + categories.size() + " categories, -1 for missing)", "code " + code + " at row " + i
                        + "; the file is damaged or was not written by anndata: write it again");
            }
        }
        return new FrameColumn.Categorical(numbers, categories, ordered);
    }

    /**
     * A nullable column from its values and mask, checked: integer (or bool) values, a bool mask as long as them.
     *
     * @param location the store, for messages
     * @param path the column
     * @param values the values as read
     * @param mask the mask as read (true where missing), or null when the column has none
     * @param bools whether it is a {@code nullable-boolean} column
     * @return the column
     * @throws InvalidFileException naming what is wrong
     */
    public static FrameColumn nullable(Path location, String path, FrameColumn values, FrameColumn mask, boolean bools) {
        String kind = bools ? "nullable-boolean" : "nullable-integer";
        boolean fits = bools ? values instanceof FrameColumn.Bools
                : values instanceof FrameColumn.Numbers numbers && numbers.isInteger();
        if (!fits) {
            throw new InvalidFileException(location, -1, (bools ? "bool" : "integer") + " values of the " + kind + " column "
                    + path, values.typeName() + CONVERT);
        }
        boolean[] flags = null;
        if (mask != null) {
            if (!(mask instanceof FrameColumn.Bools bits)) {
                throw new InvalidFileException(location, -1, "a bool mask in " + path + "/mask", mask.typeName() + CONVERT);
            }
            if (bits.size() != values.size()) {
                throw new InvalidFileException(location, -1, path + "/mask as long as its values (" + values.size() + ")",
                        bits.size() + " entries");
            }
            flags = bits.values();
        }
        return new FrameColumn.Nullable(values, flags);
    }

    /**
     * Refuses a column whose length is not the dataframe's: {@code n_obs} for {@code obs}, {@code n_vars} for
     * {@code var} (and {@code raw/var}).
     *
     * @param location the store, for messages
     * @param path the column
     * @param frame the dataframe
     * @param expected the rows it must have, or -1 for any
     * @param length the rows it has
     * @throws InvalidFileException when they differ
     */
    public static void checkLength(Path location, String path, String frame, long expected, int length) {
        if (expected >= 0 && length != expected) {
            String size = "obs".equals(frame) ? "n_obs" : "n_vars";
            throw new InvalidFileException(location, -1, path + " of " + expected + " values (" + size + ", from X)",
                    length + " values; the dataframe and X disagree: write the file again with anndata");
        }
    }
}
