package dev.memfit.shard;

/**
 * How a shard stores its cells. The values are of the folder's {@code dtype}: float32, or float64 for shards of a
 * float64 X ({@link ShardWriter}).
 */
public enum ShardLayout {
    /** One {@code .npy} per shard: cells x genes, every value stored (zeros included). */
    DENSE("dense"),
    /**
     * Compressed sparse rows, three {@code .npy} per shard: {@code .data.npy} (the values),
     * {@code .indices.npy} (int32 gene of each value, strictly ascending within a cell: a gene the input stored
     * twice in a cell is summed into one value, as scipy's {@code sum_duplicates}) and {@code .indptr.npy} (int64,
     * cells + 1 entries: cell {@code i}'s values are at {@code [indptr[i], indptr[i + 1])}). Only the non-zero values are
     * stored: about the size of the source's sparse X; rows are densified as they are read.
     */
    SPARSE("sparse");

    private final String key;

    ShardLayout(String key) {
        this.key = key;
    }

    /**
     * The name in {@code shard_metadata.json} and on the command line.
     *
     * @return "dense" or "sparse"
     */
    public String key() {
        return key;
    }

    /**
     * The layout of a name.
     *
     * @param key "dense" or "sparse" (any case)
     * @return the layout
     * @throws dev.memfit.MemfitException naming the accepted names
     */
    public static ShardLayout of(String key) {
        for (ShardLayout layout : values()) {
            if (layout.key.equalsIgnoreCase(key)) {
                return layout;
            }
        }
        throw new dev.memfit.MemfitException("shard layout: expected dense or sparse, found '" + key + "'");
    }
}
