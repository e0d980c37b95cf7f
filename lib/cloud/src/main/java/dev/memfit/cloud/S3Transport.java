package dev.memfit.cloud;

import dev.memfit.MemfitException;
import dev.memfit.io.cloud.ObjectChangedException;
import dev.memfit.io.cloud.ObjectInfo;
import dev.memfit.io.cloud.ObjectUri;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.retries.api.BackoffStrategy;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The S3 protocol for {@link ObjectStore}, on the AWS SDK: {@code s3://} on AWS or any S3-compatible server,
 * {@code gs://} through Google Cloud Storage's XML API with HMAC keys. Server errors, throttling and dropped
 * connections are retried by the SDK's standard strategy with full-jitter backoff; a body cut mid-way is resumed by a
 * range request for the bytes still missing. Made by {@link ObjectStore} at its first request.
 */
final class S3Transport implements ObjectStore.Transport {

    private final ObjectStore.Settings settings;
    private final AwsCredentialsProvider s3Credentials;
    private final AwsCredentialsProvider gsCredentials;
    private final Object clientsLock = new Object();
    private S3Client s3;
    private S3Client gs;
    private final AtomicLong executions = new AtomicLong();
    private final AtomicLong attempts = new AtomicLong();
    private final AtomicLong resumes = new AtomicLong();
    private final AtomicLong bytesDownloaded = new AtomicLong();

    S3Transport(ObjectStore.Settings settings) {
        this.settings = settings;
        this.s3Credentials = settings.accessKeyId() != null
                ? StaticCredentialsProvider.create(AwsBasicCredentials.create(settings.accessKeyId(), settings.secretAccessKey()))
                : DefaultCredentialsProvider.builder().build();
        String gsId = settings.gsAccessKeyId() != null ? settings.gsAccessKeyId() : settings.environment().get("GS_ACCESS_KEY_ID");
        String gsSecret = settings.gsAccessKeyId() != null ? settings.gsSecret() : settings.environment().get("GS_SECRET_ACCESS_KEY");
        this.gsCredentials = gsId != null && gsSecret != null
                ? StaticCredentialsProvider.create(AwsBasicCredentials.create(gsId, gsSecret)) : s3Credentials;
    }

    private String endpointOf(ObjectUri uri) {
        if (uri.scheme().equals("gs")) {
            return settings.gsEndpoint().toString();
        }
        return settings.endpoint() != null ? settings.endpoint().toString() : "aws:" + settings.region();
    }

    /** An ETag without the quotes servers put around it. */
    static String unquote(String etag) {
        if (etag == null) {
            return "";
        }
        return etag.length() >= 2 && etag.startsWith("\"") && etag.endsWith("\"") ? etag.substring(1, etag.length() - 1) : etag;
    }

    private S3Client client(String scheme) {
        synchronized (clientsLock) {
            if (scheme.equals("gs")) {
                if (gs == null) {
                    gs = newClient(settings.gsEndpoint(), "auto", true, gsCredentials);
                }
                return gs;
            }
            if (s3 == null) {
                s3 = newClient(settings.endpoint(), settings.region(), settings.pathStyle(), s3Credentials);
            }
            return s3;
        }
    }

    private S3Client newClient(URI endpoint, String region, boolean pathStyle, AwsCredentialsProvider credentials) {
        BackoffStrategy backoff = BackoffStrategy.exponentialDelay(settings.baseDelay(), settings.maxDelay());
        var builder = S3Client.builder()
                .httpClient(UrlConnectionHttpClient.builder()
                        .connectionTimeout(Duration.ofSeconds(10))
                        .socketTimeout(settings.socketTimeout())
                        .build())
                .region(Region.of(region))
                .credentialsProvider(credentials)
                .forcePathStyle(pathStyle)
                // S3-compatible servers and GCS reject or ignore the SDK's newer default checksum headers
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .overrideConfiguration(o -> o
                        .retryStrategy(AwsRetryStrategy.standardRetryStrategy().toBuilder()
                                .maxAttempts(settings.maxAttempts())
                                .backoffStrategy(backoff)
                                .throttlingBackoffStrategy(backoff)
                                // a long epoch must not stop retrying because earlier requests used up a quota
                                .circuitBreakerEnabled(false)
                                .build())
                        .addExecutionInterceptor(new Counter()));
        if (endpoint != null) {
            builder.endpointOverride(endpoint);
        }
        return builder.build();
    }

    /** Counts executions and attempts: their difference is the number of retries the SDK made. */
    private final class Counter implements ExecutionInterceptor {
        @Override
        public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
            executions.incrementAndGet();
        }

        @Override
        public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
            attempts.incrementAndGet();
        }
    }

    /**
     * Asks for an object's size and ETag (a HEAD request).
     *
     * @param uri the object
     * @return its current version
     * @throws MemfitException naming the object when it or its bucket does not exist, or access is refused
     */
    @Override
    public ObjectInfo head(ObjectUri uri) {
        try {
            HeadObjectResponse response = client(uri.scheme()).headObject(r -> r.bucket(uri.bucket()).key(uri.key()));
            return new ObjectInfo(uri, response.contentLength(), unquote(response.eTag()));
        } catch (SdkException e) {
            throw failure(uri, e);
        }
    }

    /**
     * Lists the objects whose keys start with a prefix ({@code s3://bucket/folder/} lists a folder), in key order.
     *
     * @param prefix the bucket and key prefix
     * @return every object under it (all pages)
     */
    @Override
    public List<ObjectInfo> list(ObjectUri prefix) {
        List<ObjectInfo> objects = new ArrayList<>();
        try {
            String token = null;
            do {
                ListObjectsV2Request.Builder request = ListObjectsV2Request.builder().bucket(prefix.bucket())
                        .prefix(prefix.key());
                if (token != null) {
                    request.continuationToken(token);
                }
                ListObjectsV2Response page = client(prefix.scheme()).listObjectsV2(request.build());
                for (S3Object object : page.contents()) {
                    objects.add(new ObjectInfo(new ObjectUri(prefix.scheme(), prefix.bucket(), object.key()),
                            object.size(), unquote(object.eTag())));
                }
                token = Boolean.TRUE.equals(page.isTruncated()) ? page.nextContinuationToken() : null;
            } while (token != null);
        } catch (SdkException e) {
            throw failure(prefix, e);
        }
        return objects;
    }

    /**
     * Reads {@code into.byteSize()} bytes of one version of an object with range requests
     * ({@code If-Match: etag}), resuming a transfer cut mid-way from where it stopped.
     *
     * @param uri the object
     * @param etag the version to read (from {@link #head}); reading fails when the server has another one
     * @param position the first byte
     * @param into where the bytes go
     * @throws ObjectChangedException when the object was replaced on the server
     * @throws MemfitException when the object cannot be read after the configured attempts
     */
    @Override
    public void read(ObjectUri uri, String etag, long position, MemorySegment into) {
        long total = into.byteSize();
        long done = 0;
        int failures = 0;
        while (done < total) {
            long from = position + done;
            GetObjectRequest request = GetObjectRequest.builder().bucket(uri.bucket()).key(uri.key())
                    .range("bytes=" + from + "-" + (position + total - 1)).ifMatch("\"" + etag + "\"").build();
            long before = done;
            IOException cut;
            ResponseInputStream<GetObjectResponse> body;
            try {
                body = client(uri.scheme()).getObject(request);
            } catch (AwsServiceException e) {
                if (e.statusCode() == 412) {
                    throw changed(uri, etag);
                }
                throw failure(uri, e);
            } catch (SdkException e) {
                throw failure(uri, e);
            }
            try (body) {
                String found = unquote(body.response().eTag());
                if (!found.isEmpty() && !found.equals(etag)) {
                    body.abort();
                    throw new ObjectChangedException(uri, etag, found);
                }
                done += copy(body, into.asSlice(done));
                if (done == total) {
                    return;
                }
                cut = new IOException("the response ended after " + (done - before) + " of " + (total - before) + " bytes");
                body.abort();
            } catch (IOException | SdkClientException e) {
                // the SDK reports some cut bodies as its own (unchecked) client exception
                cut = e instanceof IOException io ? io : new IOException(e.getMessage(), e);
                body.abort();
            }
            if (done > before) {
                failures = 0; // progress was made: the next cut starts a fresh count
            }
            if (++failures >= settings.maxAttempts()) {
                throw new MemfitException(uri + ": the transfer of bytes " + (position + done) + ".." + (position + total)
                        + " was cut " + failures + " times in a row (last: " + firstLine(cut.getMessage())
                        + "); check the network, or raise ObjectStore.builder().optMaxAttempts");
            }
            resumes.incrementAndGet();
            sleep(failures);
        }
    }

    /** Copies a response body into the segment until it ends or the segment is full; returns the bytes copied. */
    private long copy(InputStream body, MemorySegment into) throws IOException {
        ByteBuffer target = into.asByteBuffer();
        long copied = 0;
        ReadableByteChannel channel = Channels.newChannel(body);
        while (target.hasRemaining()) {
            int n = channel.read(target);
            if (n < 0) {
                break;
            }
            copied += n;
            bytesDownloaded.addAndGet(n);
        }
        return copied;
    }

    private void sleep(int failures) {
        long bound = Math.min(settings.maxDelay().toNanos(), settings.baseDelay().toNanos() << Math.min(failures, 20));
        long nanos = bound <= 0 ? 0 : ThreadLocalRandom.current().nextLong(bound + 1);
        try {
            Thread.sleep(Duration.ofNanos(nanos));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MemfitException("interrupted while waiting to retry a read", e);
        }
    }

    /**
     * Requests sent, counting each attempt.
     *
     * @return the count
     */
    @Override
    public long requests() {
        return attempts.get() + resumes.get();
    }

    /**
     * Attempts that followed a failed one: the SDK's retries plus resumed transfers.
     *
     * @return the count
     */
    @Override
    public long retries() {
        return attempts.get() - executions.get() + resumes.get();
    }

    /**
     * Bytes received in response bodies of reads.
     *
     * @return the count
     */
    @Override
    public long bytesDownloaded() {
        return bytesDownloaded.get();
    }

    /** One line for a failure: which object, what the server or the client said, what to check. No credentials. */
    private MemfitException failure(ObjectUri uri, SdkException e) {
        String where = " (endpoint " + endpointOf(uri) + ")";
        if (e instanceof AwsServiceException service) {
            int status = service.statusCode();
            String code = service.awsErrorDetails() != null && service.awsErrorDetails().errorCode() != null
                    ? service.awsErrorDetails().errorCode() : "";
            if (code.equals("NoSuchBucket") || (status == 404 && !bucketExists(uri))) {
                return new MemfitException(uri + ": no such bucket \"" + uri.bucket() + "\"" + where, e);
            }
            if (status == 404) {
                return new ObjectStore.NoSuchObject(uri + ": no such object (key \"" + uri.key() + "\" in bucket \""
                        + uri.bucket() + "\")" + where, e);
            }
            if (code.equals("InvalidAccessKeyId") || code.equals("SignatureDoesNotMatch") || status == 401) {
                return new MemfitException(uri + ": the server refused the credentials (" + (code.isEmpty() ? status : code)
                        + ")" + where + "; check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the profile", e);
            }
            if (status == 403) {
                return new MemfitException(uri + ": access denied" + (code.isEmpty() || code.equals("AccessDenied")
                        ? "" : " (" + code + ")") + where + "; check the credentials and that they may read bucket \""
                        + uri.bucket() + "\"", e);
            }
            return new MemfitException(uri + ": the server answered " + status + (code.isEmpty() ? "" : " " + code)
                    + where + " after " + settings.maxAttempts() + " attempts", e);
        }
        if (e instanceof SdkClientException && String.valueOf(e.getMessage()).contains("credentials")) {
            return new MemfitException(uri + ": no credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                    + "or AWS_PROFILE" + (uri.scheme().equals("gs") ? " (gs://: GS_ACCESS_KEY_ID and GS_SECRET_ACCESS_KEY, "
                    + "an HMAC key)" : ""), e);
        }
        return new MemfitException(uri + ": cannot reach the object store" + where + ": " + firstLine(e.getMessage()), e);
    }

    /** The version read is gone (412 to If-Match): say which one the server has now, when it answers. */
    private ObjectChangedException changed(ObjectUri uri, String etag) {
        String now = null;
        try {
            now = head(uri).etag();
        } catch (MemfitException ignored) {
            // the message says "another version" then
        }
        return new ObjectChangedException(uri, etag, now);
    }

    private boolean bucketExists(ObjectUri uri) {
        try {
            client(uri.scheme()).headBucket(r -> r.bucket(uri.bucket()));
            return true;
        } catch (AwsServiceException e) {
            return e.statusCode() != 404;
        } catch (SdkException e) {
            return true;
        }
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "no detail";
        }
        String line = message.strip().lines().findFirst().orElse("");
        return line.length() > 200 ? line.substring(0, 200) + "..." : line;
    }

    /** Closes the HTTP clients. */
    @Override
    public void close() {
        synchronized (clientsLock) {
            if (s3 != null) {
                s3.close();
                s3 = null;
            }
            if (gs != null) {
                gs.close();
                gs = null;
            }
        }
    }
}
