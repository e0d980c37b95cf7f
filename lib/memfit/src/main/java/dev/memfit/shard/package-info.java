/**
 * Shards: an {@code .h5ad} converted out of core into memory-mappable {@code .npy} shards, sparse (CSR: values,
 * gene indices, row pointers; the default for a sparse X) or dense, with Parquet cell tables and checksummed
 * metadata; their validation; a store giving random access across them (CSR rows densified into the batch); and
 * the gene vocabulary that maps every input's genes onto the shards' columns.
 */
package dev.memfit.shard;
