/**
 * Objects in cloud storage ({@code s3://bucket/key}, and {@code gs://bucket/key} through Google Cloud Storage's
 * S3-compatible XML API) read through a verified local cache.
 *
 * <p>{@link dev.memfit.io.cloud.ObjectStore} talks to the server (HEAD, range GET, LIST, with retries);
 * {@link dev.memfit.io.cloud.ObjectCache} keeps fixed-size blocks of objects on local disk, each checked with CRC32C
 * on every read, bounded by a size limit, shared safely by several processes, and is a
 * {@link dev.memfit.io.storage.Storage}, so a reader that takes a storage reads objects through it.
 */
package dev.memfit.io.cloud;
