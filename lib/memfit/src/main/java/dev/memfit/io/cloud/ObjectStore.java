package dev.memfit.io.cloud;

import dev.memfit.MemfitException;

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
 * A client of S3-compatible object storage: {@code s3://} objects on AWS or on any server that speaks the S3 protocol
 * (endpoint override, path-style access), and {@code gs://} objects through Google Cloud Storage's S3-compatible XML
 * API with HMAC keys. One store serves both schemes; it is thread-safe.
 *
 * <p>Settings come from the environment unless set on the builder: {@code AWS_ENDPOINT_URL_S3} or
 * {@code AWS_ENDPOINT_URL} (an S3-compatible server; path-style access is then the default), {@code AWS_REGION} or
 * {@code AWS_DEFAULT_REGION} (else {@code us-east-1}), credentials through the AWS SDK's default chain (environment,
 * system properties, {@code ~/.aws} profile files, container and instance roles). For {@code gs://},
 * {@code GS_ACCESS_KEY_ID}/{@code GS_SECRET_ACCESS_KEY} (an HMAC key of a service account) when set, else the same
 * chain. Credentials are never printed, logged or put into messages.
 *
 * <p>Failures: server errors (5xx), throttling ({@code 503 SlowDown}) and connections dropped before a response are
 * retried by the SDK's standard strategy with exponential backoff and full jitter ({@link Builder#optMaxAttempts},
 * {@link Builder#optBackoff}); a transfer cut in the middle of the body is resumed by a range request for the bytes
 * still missing, bounded by the same number of attempts. Everything else fails with one {@link MemfitException}
 * line naming the object and what to check.
 *
 * <pre>{@code
 * try (ObjectStore store = ObjectStore.fromEnvironment()) {
 *     ObjectInfo info = store.head(ObjectUri.parse("s3://atlas/cells.npy"));
 * }
 * }</pre>
 */
public final class ObjectStore implements AutoCloseable {

    /** Google Cloud Storage's S3-compatible XML API. */
    public static final URI GCS_ENDPOINT = URI.create("https://storage.googleapis.com");

    private final Builder settings;
    private final AwsCredentialsProvider s3Credentials;
    private final AwsCredentialsProvider gsCredentials;
    private final Object clientsLock = new Object();
    private S3Client s3;
    private S3Client gs;
    private final AtomicLong executions = new AtomicLong();
    private final AtomicLong attempts = new AtomicLong();
    private final AtomicLong resumes = new AtomicLong();
    private final AtomicLong bytesDownloaded = new AtomicLong();

    private ObjectStore(Builder settings) {
        this.settings = settings;
        this.s3Credentials = settings.credentials != null ? settings.credentials : DefaultCredentialsProvider.builder().build();
        String gsId = settings.environment.get("GS_ACCESS_KEY_ID");
        String gsSecret = settings.environment.get("GS_SECRET_ACCESS_KEY");
        this.gsCredentials = settings.gsCredentials != null ? settings.gsCredentials
                : gsId != null && gsSecret != null ? StaticCredentialsProvider.create(AwsBasicCredentials.create(gsId, gsSecret))
                : s3Credentials;
    }

    /**
     * A store configured from the environment only (see the class description).
     *
     * @return the store
     */
    public static ObjectStore fromEnvironment() {
        return builder().build();
    }

    /**
     * Starts configuring a store; every setting is optional.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Settings of an {@link ObjectStore}; those left unset come from the environment. */
    public static final class Builder {
        private Map<String, String> environment = System.getenv();
        private URI endpoint;
        private String region;
        private Boolean pathStyle;
        private AwsCredentialsProvider credentials;
        private URI gsEndpoint = GCS_ENDPOINT;
        private AwsCredentialsProvider gsCredentials;
        private int maxAttempts = 6;
        private Duration baseDelay = Duration.ofMillis(100);
        private Duration maxDelay = Duration.ofSeconds(20);
        private Duration socketTimeout = Duration.ofSeconds(60);

        private Builder() {
        }

        /**
         * Reads the settings' defaults from this map instead of the process environment (for tests and tools).
         *
         * @param variables environment variables
         * @return this builder
         */
        public Builder optEnvironment(Map<String, String> variables) {
            this.environment = Map.copyOf(variables);
            return this;
        }

        /**
         * The S3-compatible server for {@code s3://} objects (default: {@code AWS_ENDPOINT_URL_S3},
         * {@code AWS_ENDPOINT_URL}, else AWS itself).
         *
         * @param url such as {@code http://127.0.0.1:9000}
         * @return this builder
         */
        public Builder optEndpoint(URI url) {
            this.endpoint = url;
            return this;
        }

        /**
         * The region requests are signed for (default: {@code AWS_REGION}, {@code AWS_DEFAULT_REGION}, else
         * {@code us-east-1}).
         *
         * @param name such as {@code eu-west-1}
         * @return this builder
         */
        public Builder optRegion(String name) {
            this.region = name;
            return this;
        }

        /**
         * Path-style addresses ({@code endpoint/bucket/key}) instead of virtual-hosted ones
         * ({@code bucket.endpoint/key}); default: true when an endpoint is set, as S3-compatible servers expect.
         *
         * @param enabled whether to use path-style addresses
         * @return this builder
         */
        public Builder optPathStyle(boolean enabled) {
            this.pathStyle = enabled;
            return this;
        }

        /**
         * Fixed credentials for {@code s3://} instead of the SDK's default chain.
         *
         * @param accessKeyId the access key id
         * @param secretAccessKey the secret key (kept only by the SDK's signer, never printed)
         * @return this builder
         */
        public Builder optCredentials(String accessKeyId, String secretAccessKey) {
            this.credentials = StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKeyId, secretAccessKey));
            return this;
        }

        /**
         * The endpoint for {@code gs://} objects (default {@link #GCS_ENDPOINT}).
         *
         * @param url the endpoint
         * @return this builder
         */
        public Builder optGcsEndpoint(URI url) {
            this.gsEndpoint = url;
            return this;
        }

        /**
         * Fixed HMAC credentials for {@code gs://} (default: {@code GS_ACCESS_KEY_ID}/{@code GS_SECRET_ACCESS_KEY},
         * else the credentials of {@code s3://}).
         *
         * @param accessKeyId the HMAC key's access id
         * @param secret the HMAC key's secret
         * @return this builder
         */
        public Builder optGcsCredentials(String accessKeyId, String secret) {
            this.gsCredentials = StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKeyId, secret));
            return this;
        }

        /**
         * How many times one request is tried in all, retries included (default 6).
         *
         * @param attempts at least 1
         * @return this builder
         */
        public Builder optMaxAttempts(int attempts) {
            this.maxAttempts = attempts;
            return this;
        }

        /**
         * The backoff between attempts: a random delay up to {@code base * 2^attempt}, capped at {@code max}
         * (default 100 ms and 20 s).
         *
         * @param base the first delay's upper bound
         * @param max the largest delay
         * @return this builder
         */
        public Builder optBackoff(Duration base, Duration max) {
            this.baseDelay = base;
            this.maxDelay = max;
            return this;
        }

        /**
         * How long a read may wait for the next bytes of a response before the attempt counts as dropped
         * (default 60 s).
         *
         * @param timeout the socket timeout
         * @return this builder
         */
        public Builder optSocketTimeout(Duration timeout) {
            this.socketTimeout = timeout;
            return this;
        }

        /**
         * Creates the store; no request is sent yet.
         *
         * @return the store
         */
        public ObjectStore build() {
            if (maxAttempts < 1) {
                throw new MemfitException("ObjectStore: optMaxAttempts must be at least 1, got " + maxAttempts);
            }
            if (baseDelay.isNegative() || maxDelay.compareTo(baseDelay) < 0) {
                throw new MemfitException("ObjectStore: optBackoff needs 0 <= base <= max, got " + baseDelay + " and "
                        + maxDelay);
            }
            if (endpoint == null) {
                String fromEnvironment = environment.getOrDefault("AWS_ENDPOINT_URL_S3", environment.get("AWS_ENDPOINT_URL"));
                if (fromEnvironment != null && !fromEnvironment.isBlank()) {
                    endpoint = URI.create(fromEnvironment.strip());
                }
            }
            if (region == null) {
                region = environment.getOrDefault("AWS_REGION", environment.getOrDefault("AWS_DEFAULT_REGION", "us-east-1"));
            }
            if (pathStyle == null) {
                pathStyle = endpoint != null;
            }
            return new ObjectStore(this);
        }
    }

    private S3Client client(String scheme) {
        synchronized (clientsLock) {
            if (scheme.equals("gs")) {
                if (gs == null) {
                    gs = newClient(settings.gsEndpoint, "auto", true, gsCredentials);
                }
                return gs;
            }
            if (s3 == null) {
                s3 = newClient(settings.endpoint, settings.region, settings.pathStyle, s3Credentials);
            }
            return s3;
        }
    }

    private S3Client newClient(URI endpoint, String region, boolean pathStyle, AwsCredentialsProvider credentials) {
        BackoffStrategy backoff = BackoffStrategy.exponentialDelay(settings.baseDelay, settings.maxDelay);
        var builder = S3Client.builder()
                .httpClient(UrlConnectionHttpClient.builder()
                        .connectionTimeout(Duration.ofSeconds(10))
                        .socketTimeout(settings.socketTimeout)
                        .build())
                .region(Region.of(region))
                .credentialsProvider(credentials)
                .forcePathStyle(pathStyle)
                // S3-compatible servers and GCS reject or ignore the SDK's newer default checksum headers
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .overrideConfiguration(o -> o
                        .retryStrategy(AwsRetryStrategy.standardRetryStrategy().toBuilder()
                                .maxAttempts(settings.maxAttempts)
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
     * Where requests for an object go, for cache keys and messages: the endpoint URL, or {@code aws} for AWS S3.
     *
     * @param uri an object
     * @return the endpoint's description
     */
    public String endpointOf(ObjectUri uri) {
        if (uri.scheme().equals("gs")) {
            return settings.gsEndpoint.toString();
        }
        return settings.endpoint != null ? settings.endpoint.toString() : "aws:" + settings.region;
    }

    /**
     * Asks for an object's size and ETag (a HEAD request).
     *
     * @param uri the object
     * @return its current version
     * @throws MemfitException naming the object when it or its bucket does not exist, or access is refused
     */
    public ObjectInfo head(ObjectUri uri) {
        try {
            HeadObjectResponse response = client(uri.scheme()).headObject(r -> r.bucket(uri.bucket()).key(uri.key()));
            return new ObjectInfo(uri, response.contentLength(), ObjectInfo.unquote(response.eTag()));
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
                            object.size(), ObjectInfo.unquote(object.eTag())));
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
                String found = ObjectInfo.unquote(body.response().eTag());
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
            if (++failures >= settings.maxAttempts) {
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
        long bound = Math.min(settings.maxDelay.toNanos(), settings.baseDelay.toNanos() << Math.min(failures, 20));
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
    public long requests() {
        return attempts.get() + resumes.get();
    }

    /**
     * Attempts that followed a failed one: the SDK's retries plus resumed transfers.
     *
     * @return the count
     */
    public long retries() {
        return attempts.get() - executions.get() + resumes.get();
    }

    /**
     * Bytes received in response bodies of reads.
     *
     * @return the count
     */
    public long bytesDownloaded() {
        return bytesDownloaded.get();
    }

    /** One line for a failure: which object, what the server or the client said, what to check. No credentials. */
    MemfitException failure(ObjectUri uri, SdkException e) {
        String where = " (endpoint " + endpointOf(uri) + ")";
        if (e instanceof AwsServiceException service) {
            int status = service.statusCode();
            String code = service.awsErrorDetails() != null && service.awsErrorDetails().errorCode() != null
                    ? service.awsErrorDetails().errorCode() : "";
            if (code.equals("NoSuchBucket") || (status == 404 && !bucketExists(uri))) {
                return new MemfitException(uri + ": no such bucket \"" + uri.bucket() + "\"" + where, e);
            }
            if (status == 404) {
                return new NoSuchObject(uri + ": no such object (key \"" + uri.key() + "\" in bucket \""
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
                    + where + " after " + settings.maxAttempts + " attempts", e);
        }
        if (e instanceof SdkClientException && String.valueOf(e.getMessage()).contains("credentials")) {
            return new MemfitException(uri + ": no credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                    + "or AWS_PROFILE" + (uri.scheme().equals("gs") ? " (gs://: GS_ACCESS_KEY_ID and GS_SECRET_ACCESS_KEY, "
                    + "an HMAC key)" : ""), e);
        }
        return new MemfitException(uri + ": cannot reach the object store" + where + ": " + firstLine(e.getMessage()), e);
    }

    /** A 404 for an object in a bucket that exists: what {@link ObjectCache#exists} answers false for. */
    static final class NoSuchObject extends MemfitException {
        NoSuchObject(String message, Throwable cause) {
            super(message, cause);
        }
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

    /**
     * A short description such as {@code s3 (http://127.0.0.1:9000, path-style)}.
     *
     * @return the description
     */
    public String describe() {
        return "s3 (" + (settings.endpoint != null ? settings.endpoint : "aws " + settings.region)
                + (settings.pathStyle ? ", path-style" : "") + ")";
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
