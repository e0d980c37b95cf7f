/**
 * Shards: an {@code .h5ad} converted out of core into memory-mappable {@code .npy} shards with Parquet cell tables
 * and checksummed metadata, their validation, and a store giving random access across them.
 */
package dev.memfit.shard;
