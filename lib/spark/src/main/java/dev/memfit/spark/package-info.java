/**
 * memfit on Apache Spark (opt-in module {@code memfit-spark}): {@link dev.memfit.spark.SparkShards} converts one or
 * many {@code .h5ad} files into a shard folder, each Spark task writing consecutive shards of one file, byte for byte
 * the folder the single-process {@link dev.memfit.shard.ShardWriter} writes; {@link dev.memfit.spark.SparkPreprocess}
 * writes what {@link dev.memfit.prep.Preprocess} writes. {@link dev.memfit.spark.SparkMain} is the command line
 * {@code ./memfit} runs, {@link dev.memfit.spark.SubmitMain} the main class of the spark-submit jar.
 */
package dev.memfit.spark;
