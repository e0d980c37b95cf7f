package dev.memfit.cloud;

import dev.memfit.io.cloud.ObjectInfo;
import org.gaul.s3proxy.junit.S3ProxyJunitCore;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedPart;

import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A real S3 server for tests: S3Proxy in this JVM on 127.0.0.1 (a free port, a temporary filesystem backend, SigV4
 * with fixed test credentials), and an SDK client that uploads objects to it.
 */
public final class S3TestServer implements AutoCloseable {

    public static final String ACCESS_KEY = "memfit-test-access";
    public static final String SECRET_KEY = "memfit-test-secret-do-not-print";

    private final S3ProxyJunitCore proxy;
    final S3Client client;

    public S3TestServer() throws Exception {
        proxy = new S3ProxyJunitCore.Builder().withCredentials(ACCESS_KEY, SECRET_KEY).build();
        proxy.beforeEach();
        client = S3Client.builder().endpointOverride(endpoint()).forcePathStyle(true).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .httpClient(UrlConnectionHttpClient.create()).build();
    }

    public URI endpoint() {
        return proxy.getUri();
    }

    /** A store that talks to this server (or to another endpoint in front of it, such as a fault proxy). */
    public ObjectStore.Builder store(URI endpoint) {
        return ObjectStore.builder().optEnvironment(java.util.Map.of()).optEndpoint(endpoint)
                .optCredentials(ACCESS_KEY, SECRET_KEY);
    }

    public void createBucket(String bucket) {
        client.createBucket(r -> r.bucket(bucket));
    }

    /** Uploads in one PUT: the ETag is the MD5 of the bytes. */
    public String put(String bucket, String key, byte[] bytes) {
        return S3Transport.unquote(client.putObject(r -> r.bucket(bucket).key(key), RequestBody.fromBytes(bytes)).eTag());
    }

    /** Uploads in parts of {@code partBytes} (the last one shorter): the ETag ends in {@code -N}. */
    public String putMultipart(String bucket, String key, byte[] bytes, int partBytes) {
        String upload = client.createMultipartUpload(r -> r.bucket(bucket).key(key)).uploadId();
        List<CompletedPart> parts = new ArrayList<>();
        for (int start = 0, number = 1; start < bytes.length; start += partBytes, number++) {
            byte[] part = Arrays.copyOfRange(bytes, start, Math.min(bytes.length, start + partBytes));
            int n = number;
            String etag = client.uploadPart(r -> r.bucket(bucket).key(key).uploadId(upload).partNumber(n),
                    RequestBody.fromBytes(part)).eTag();
            parts.add(CompletedPart.builder().partNumber(n).eTag(etag).build());
        }
        return S3Transport.unquote(client.completeMultipartUpload(r -> r.bucket(bucket).key(key).uploadId(upload)
                .multipartUpload(m -> m.parts(parts))).eTag());
    }

    @Override
    public void close() {
        client.close();
        proxy.afterEach();
    }
}
