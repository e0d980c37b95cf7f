/**
 * memfit-cloud: objects in {@code s3://} and {@code gs://} buckets. {@link dev.memfit.cloud.ObjectStore} talks to the
 * server (HEAD, range GET, LIST, with retries) through the AWS SDK ({@link dev.memfit.cloud.S3Transport});
 * {@link dev.memfit.cloud.BlockCache} keeps fixed-size blocks of objects on local disk, no byte served before the
 * CRC32C of its piece was checked, bounded by a size limit, shared safely by several processes, and is the core's
 * {@link dev.memfit.io.cloud.ObjectCache}, registered through {@link java.util.ServiceLoader}
 * ({@link dev.memfit.cloud.CacheProvider}): add this module and the core's loaders read buckets. A program that reads
 * no bucket does not need it.
 */
package dev.memfit.cloud;
