/**
 * Objects in cloud storage ({@code s3://bucket/key}, and {@code gs://bucket/key} through Google Cloud Storage's
 * S3-compatible XML API) read through a verified local cache.
 *
 * <p>{@link dev.memfit.io.cloud.ObjectStore} talks to the server (HEAD, range GET, LIST, with retries);
 * {@link dev.memfit.io.cloud.ObjectCache} keeps fixed-size blocks of objects on local disk, no byte served before the
 * CRC32C of its piece was checked in that mapping, bounded by a size limit, shared safely by several processes, and
 * is a {@link dev.memfit.io.storage.Storage}, so a reader that takes a storage reads objects through it.
 */
package dev.memfit.io.cloud;
