package dev.memfit.bench;

import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.cloud.BlockCache;
import dev.memfit.MemfitException;
import dev.memfit.cloud.ObjectStore;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.storage.Folders;

import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.BlobStores;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.blobstore.BlobStore;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedPart;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A real S3 server on this machine, for benchmarks and notebooks: S3Proxy in this JVM, bound to 127.0.0.1 on a free
 * port, speaking the S3 wire protocol (SigV4, range GETs, ETags, multipart uploads), with objects kept in memory or in
 * a local folder. Nothing leaves the machine; the credentials are fixed local ones.
 *
 * <p>Objects are uploaded from local files through the AWS SDK's own client ({@link #upload}, {@link #uploadMultipart}),
 * so their ETags are what S3 gives: the MD5 of the bytes for one PUT, {@code MD5-of-MD5s-N} for N parts. Readers get a
 * store pointed at it with {@link #store()}; put a {@link WanLink} in between to simulate a wide-area network.
 *
 * <p>Close it (try-with-resources): S3Proxy's Jetty threads are not daemon threads, so a program that leaves a server
 * running does not exit at the end of {@code main}.
 *
 * <pre>{@code
 * try (LocalS3 s3 = LocalS3.inFolder(Path.of("build/s3"))) {
 *     s3.createBucket("atlas");
 *     ObjectUri uri = s3.upload(Path.of("cells.npy"), "atlas", "cells.npy");
 *     try (ObjectCache cache = BlockCache.builder().setStore(s3.store().build()).setFolder(cacheFolder).build()) { ... }
 * }
 * }</pre>
 */
public final class LocalS3 implements AutoCloseable {

    /** The access key id of every local server (not a secret: the server is local and holds only test data). */
    public static final String ACCESS_KEY = "memfit-local";
    /** The secret key of every local server. */
    public static final String SECRET_KEY = "memfit-local-secret";

    private final S3Proxy proxy;
    private final BlobStore blobs;
    private final URI endpoint;
    private final S3Client client;
    private final Path temporaryFolder;

    private LocalS3(String provider, Path folder, Path temporaryFolder) throws Exception {
        this.temporaryFolder = temporaryFolder;
        Properties properties = new Properties();
        if (folder != null) {
            Files.createDirectories(folder);
            properties.setProperty("jclouds.filesystem.basedir", folder.toAbsolutePath().normalize().toString());
        }
        properties.setProperty("jclouds.identity", ACCESS_KEY);
        properties.setProperty("jclouds.credential", SECRET_KEY);
        blobs = BlobStores.create(provider, properties);
        proxy = S3Proxy.builder().blobStore(blobs).awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
                .endpoint(URI.create("http://127.0.0.1:0")).ignoreUnknownHeaders(true).build();
        proxy.start();
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!proxy.getState().equals("STARTED")) {
            if (System.nanoTime() > deadline) {
                throw new MemfitException("the local S3 server did not start within 30 s (state " + proxy.getState() + ")");
            }
            Thread.sleep(10);
        }
        endpoint = URI.create("http://127.0.0.1:" + proxy.getPort());
        client = S3Client.builder().endpointOverride(endpoint).forcePathStyle(true).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .httpClient(UrlConnectionHttpClient.create()).build();
    }

    /**
     * Starts a server that keeps its objects in a folder (S3Proxy's filesystem backend: one file per object, so the
     * objects cost disk, not memory); they stay there after {@link #close()}.
     *
     * @param folder the folder (created when missing)
     * @return the running server
     */
    public static LocalS3 inFolder(Path folder) {
        return start("filesystem", folder, null);
    }

    /**
     * Starts a server whose objects live in a temporary folder, deleted by {@link #close()}.
     *
     * @return the running server
     */
    public static LocalS3 temporary() {
        Path folder;
        try {
            folder = Files.createTempDirectory("memfit-s3-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a folder for the local S3 server", e);
        }
        return start("filesystem", folder, folder);
    }

    /**
     * Starts a server that keeps its objects in memory (S3Proxy's transient backend): for small objects only.
     *
     * @return the running server
     */
    public static LocalS3 inMemory() {
        return start("transient", null, null);
    }

    private static LocalS3 start(String provider, Path folder, Path temporary) {
        try {
            return new LocalS3(provider, folder, temporary);
        } catch (MemfitException e) {
            throw e;
        } catch (Exception e) {
            throw new MemfitException("cannot start the local S3 server (S3Proxy, " + provider + " backend): " + e, e);
        }
    }

    /**
     * The server's address, such as {@code http://127.0.0.1:43121}.
     *
     * @return the endpoint
     */
    public URI endpoint() {
        return endpoint;
    }

    /**
     * The settings of a store that reads from this server: its endpoint, path-style addresses, its credentials, and
     * nothing from the process environment. Pass another endpoint to {@link #store(URI)} to read through a
     * {@link WanLink}.
     *
     * @return the store's builder
     */
    public ObjectStore.Builder store() {
        return store(endpoint);
    }

    /**
     * The settings of a store that reaches this server through another address in front of it (a {@link WanLink}).
     *
     * @param via the address requests go to
     * @return the store's builder
     */
    public ObjectStore.Builder store(URI via) {
        return ObjectStore.builder().optEnvironment(Map.of()).optEndpoint(via).optPathStyle(true)
                .optCredentials(ACCESS_KEY, SECRET_KEY);
    }

    /**
     * Creates a bucket, unless it exists.
     *
     * @param bucket the name (lower case letters, digits, dots and hyphens)
     */
    public void createBucket(String bucket) {
        if (!client.listBuckets().buckets().stream().anyMatch(b -> b.name().equals(bucket))) {
            client.createBucket(r -> r.bucket(bucket));
        }
    }

    /**
     * Uploads a local file as one object in one PUT: its ETag is the MD5 of its bytes.
     *
     * @param file the file
     * @param bucket an existing bucket
     * @param key the object's key
     * @return the object's address
     */
    public ObjectUri upload(Path file, String bucket, String key) {
        client.putObject(r -> r.bucket(bucket).key(key), RequestBody.fromFile(file));
        return new ObjectUri("s3", bucket, key);
    }

    /**
     * Uploads a local file as one object in parts of {@code partBytes} (the last one shorter), as large uploads are
     * done: its ETag ends in {@code -N}.
     *
     * @param file the file
     * @param bucket an existing bucket
     * @param key the object's key
     * @param partBytes bytes per part, at least 5 MiB as S3 requires of every part but the last
     * @return the object's address
     */
    public ObjectUri uploadMultipart(Path file, String bucket, String key, long partBytes) {
        if (partBytes < (5L << 20)) {
            throw new MemfitException("uploadMultipart: S3 needs parts of at least 5 MiB (but the last), got " + partBytes);
        }
        String upload = client.createMultipartUpload(r -> r.bucket(bucket).key(key)).uploadId();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = channel.size();
            List<CompletedPart> parts = new ArrayList<>();
            int number = 1;
            for (long start = 0; start < size || number == 1; start += partBytes, number++) {
                // one part in memory at a time: the SDK re-reads a part's body when it retries
                ByteBuffer part = ByteBuffer.allocate(Math.toIntExact(Math.min(partBytes, size - start)));
                while (part.hasRemaining()) {
                    if (channel.read(part, start + part.position()) < 0) {
                        throw new IOException(file + " became shorter during the upload");
                    }
                }
                int n = number;
                String etag = client.uploadPart(r -> r.bucket(bucket).key(key).uploadId(upload).partNumber(n),
                        RequestBody.fromBytes(part.array())).eTag();
                parts.add(CompletedPart.builder().partNumber(n).eTag(etag).build());
            }
            client.completeMultipartUpload(r -> r.bucket(bucket).key(key).uploadId(upload)
                    .multipartUpload(m -> m.parts(parts)));
        } catch (IOException e) {
            client.abortMultipartUpload(r -> r.bucket(bucket).key(key).uploadId(upload));
            throw new UncheckedIOException("cannot upload " + file, e);
        } catch (RuntimeException e) {
            client.abortMultipartUpload(r -> r.bucket(bucket).key(key).uploadId(upload));
            throw e;
        }
        return new ObjectUri("s3", bucket, key);
    }

    /**
     * Deletes an object (for tests of changed or missing objects).
     *
     * @param uri the object
     */
    public void delete(ObjectUri uri) {
        client.deleteObject(r -> r.bucket(uri.bucket()).key(uri.key()));
    }

    /**
     * Stops the server; a temporary folder of {@link #temporary()} is deleted.
     */
    @Override
    public void close() {
        client.close();
        try {
            proxy.stop();
        } catch (Exception e) {
            throw new MemfitException("cannot stop the local S3 server: " + e, e);
        } finally {
            blobs.close();
            if (temporaryFolder != null) {
                try {
                    Folders.deleteTree(temporaryFolder);
                } catch (IOException | RuntimeException ignored) {
                    // a leftover temporary folder is harmless
                }
            }
        }
    }

    @Override
    public String toString() {
        return "local S3 server (S3Proxy) at " + endpoint;
    }
}
