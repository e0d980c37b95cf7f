/**
 * Objects in cloud storage ({@code s3://bucket/key}, and {@code gs://bucket/key} through Google Cloud Storage's
 * S3-compatible XML API) as the core reads them: their addresses ({@link dev.memfit.io.cloud.ObjectUri}), versions
 * ({@link dev.memfit.io.cloud.ObjectInfo}) and the {@link dev.memfit.io.cloud.ObjectCache} contract, a
 * {@link dev.memfit.io.storage.Storage} over a verified local cache. The cache and the S3 client live in the optional
 * module {@code memfit-cloud} ({@code dev.memfit.cloud}), found by {@link java.util.ServiceLoader}.
 */
package dev.memfit.io.cloud;
