package dev.memfit.cloud;

import dev.memfit.MemfitException;
import dev.memfit.io.cloud.ObjectChangedException;
import dev.memfit.io.cloud.ObjectInfo;
import dev.memfit.io.cloud.ObjectUri;

import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;

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
 * <p>The requests themselves are sent by a {@link Transport}: {@link S3Transport}, on the AWS SDK, connecting at the
 * first request (a store that is built and described sends nothing).
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

    private final Settings settings;
    private final Object transportLock = new Object();
    private Transport transport;

    private ObjectStore(Settings settings) {
        this.settings = settings;
    }

    /**
     * What sends a store's requests: an implementation of the S3 protocol ({@link S3Transport}). Its failures are one {@link MemfitException} naming the object ({@link NoSuchObject} for a
     * missing object in a bucket that exists, {@link ObjectChangedException} for a replaced one).
     */
    public interface Transport extends AutoCloseable {
        /**
         * Asks for an object's size and ETag.
         *
         * @param uri the object
         * @return its current version
         */
        ObjectInfo head(ObjectUri uri);

        /**
         * Lists the objects under a prefix, in key order, all pages.
         *
         * @param prefix bucket and key prefix
         * @return the objects
         */
        List<ObjectInfo> list(ObjectUri prefix);

        /**
         * Reads bytes of one version of an object, resuming cut transfers.
         *
         * @param uri the object
         * @param etag the version
         * @param position the first byte
         * @param into where the bytes go (all of it is filled)
         */
        void read(ObjectUri uri, String etag, long position, MemorySegment into);

        /**
         * Requests sent, each attempt counted.
         *
         * @return the count
         */
        long requests();

        /**
         * Attempts that followed a failed one.
         *
         * @return the count
         */
        long retries();

        /**
         * Bytes received in response bodies of reads.
         *
         * @return the count
         */
        long bytesDownloaded();

        /** Closes the connections. */
        @Override
        void close();
    }

    /**
     * A store's settings, environment defaults applied. The secrets are not part of {@link #toString()}.
     *
     * @param environment the variables the defaults came from (the SDK's credential chain reads its own)
     * @param endpoint the S3-compatible server, or null for AWS
     * @param region the signing region
     * @param pathStyle whether addresses are path-style
     * @param accessKeyId fixed credentials for {@code s3://}, or null for the SDK's default chain
     * @param secretAccessKey their secret, or null
     * @param gsEndpoint the endpoint of {@code gs://}
     * @param gsAccessKeyId fixed HMAC credentials for {@code gs://}, or null (then {@code GS_ACCESS_KEY_ID}, else those of {@code s3://})
     * @param gsSecret their secret, or null
     * @param maxAttempts attempts per request, retries included
     * @param baseDelay the first backoff's bound
     * @param maxDelay the largest backoff
     * @param socketTimeout how long a read waits for bytes
     */
    public record Settings(Map<String, String> environment, URI endpoint, String region, boolean pathStyle,
                           String accessKeyId, String secretAccessKey, URI gsEndpoint, String gsAccessKeyId,
                           String gsSecret, int maxAttempts, Duration baseDelay, Duration maxDelay,
                           Duration socketTimeout) {
        @Override
        public String toString() {
            return "ObjectStore.Settings[endpoint=" + endpoint + ", region=" + region + ", pathStyle=" + pathStyle
                    + ", gsEndpoint=" + gsEndpoint + ", maxAttempts=" + maxAttempts + "]";
        }
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
        private String accessKeyId;
        private String secretAccessKey;
        private URI gsEndpoint = GCS_ENDPOINT;
        private String gsAccessKeyId;
        private String gsSecret;
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
            this.accessKeyId = accessKeyId;
            this.secretAccessKey = secretAccessKey;
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
            this.gsAccessKeyId = accessKeyId;
            this.gsSecret = secret;
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
            return new ObjectStore(new Settings(environment, endpoint, region, pathStyle, accessKeyId, secretAccessKey,
                    gsEndpoint, gsAccessKeyId, gsSecret, maxAttempts, baseDelay, maxDelay, socketTimeout));
        }
    }


    /**
     * The store's settings, defaults applied.
     *
     * @return the settings
     */
    public Settings settings() {
        return settings;
    }

    private Transport transport() {
        synchronized (transportLock) {
            if (transport == null) {
                transport = new S3Transport(settings);
            }
            return transport;
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
            return settings.gsEndpoint().toString();
        }
        return settings.endpoint() != null ? settings.endpoint().toString() : "aws:" + settings.region();
    }

    /**
     * Asks for an object's size and ETag (a HEAD request).
     *
     * @param uri the object
     * @return its current version
     * @throws MemfitException naming the object when it or its bucket does not exist, or access is refused
     */
    public ObjectInfo head(ObjectUri uri) {
        return transport().head(uri);
    }

    /**
     * Lists the objects whose keys start with a prefix ({@code s3://bucket/folder/} lists a folder), in key order.
     *
     * @param prefix the bucket and key prefix
     * @return every object under it (all pages)
     */
    public List<ObjectInfo> list(ObjectUri prefix) {
        return transport().list(prefix);
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
        transport().read(uri, etag, position, into);
    }

    private Transport opened() {
        synchronized (transportLock) {
            return transport;
        }
    }

    /**
     * Requests sent, counting each attempt.
     *
     * @return the count
     */
    public long requests() {
        Transport t = opened();
        return t == null ? 0 : t.requests();
    }

    /**
     * Attempts that followed a failed one: retries plus resumed transfers.
     *
     * @return the count
     */
    public long retries() {
        Transport t = opened();
        return t == null ? 0 : t.retries();
    }

    /**
     * Bytes received in response bodies of reads.
     *
     * @return the count
     */
    public long bytesDownloaded() {
        Transport t = opened();
        return t == null ? 0 : t.bytesDownloaded();
    }

    /** A 404 for an object in a bucket that exists: what {@link BlockCache#exists} answers false for. */
    public static final class NoSuchObject extends MemfitException {
        /**
         * Creates the exception.
         *
         * @param message one line naming the object
         * @param cause what the transport caught
         */
        public NoSuchObject(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * A short description such as {@code s3 (http://127.0.0.1:9000, path-style)}.
     *
     * @return the description
     */
    public String describe() {
        return "s3 (" + (settings.endpoint() != null ? settings.endpoint() : "aws " + settings.region())
                + (settings.pathStyle() ? ", path-style" : "") + ")";
    }

    /** Closes the transport's connections. */
    @Override
    public void close() {
        synchronized (transportLock) {
            if (transport != null) {   // a later request opens a new one, as the SDK clients did
                transport.close();
                transport = null;
            }
        }
    }
}
