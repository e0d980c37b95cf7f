/**
 * memfit-cloud: the S3 protocol (AWS SDK) behind {@link dev.memfit.io.cloud.ObjectStore}, for {@code s3://} and
 * {@code gs://} objects. The cache, staging and bucket shards stay in the core; a program that reads no bucket does
 * not need this module.
 */
package dev.memfit.cloud;
