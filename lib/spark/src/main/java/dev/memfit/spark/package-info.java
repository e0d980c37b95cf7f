/**
 * memfit on Apache Spark (opt-in module {@code memfit-spark}): {@link dev.memfit.spark.SparkShards} converts one or
 * many {@code .h5ad} files into a shard folder each Spark task writing consecutive shards of one file, byte for byte the folder the
 * single-process {@link dev.memfit.shard.ShardWriter} writes.
 */
package dev.memfit.spark;
