package dev.memfit.bench;

import dev.memfit.MemfitException;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A <b>simulated</b> wide-area link in front of an HTTP server on this machine (a {@link LocalS3}): a relay on
 * 127.0.0.1 that adds a round-trip time to every request and caps the bandwidth of all connections together, so that
 * a cold read from object storage behaves roughly as it would from a bucket in another region. It is labelled as a
 * simulation wherever it is described ({@link #describe()}, e.g. "simulated link: 20 ms round trip, 100 MiB/s
 * shared").
 *
 * <p>Model: each HTTP request waits half the round trip before it is forwarded and the other half before its
 * response starts (one round trip per request, as over a connection kept alive; the TCP and TLS handshakes of a real
 * new connection are not simulated). Response bodies of all connections share one token bucket of
 * {@code bytesPerSecond} (a burst of 5 ms worth), request bodies another of the same rate (a link is full duplex).
 * Bytes are relayed unchanged, so SigV4 signatures stay valid; only the unsigned {@code Connection} header is set to
 * {@code close}, so that each request has its own connection and its own round trip.
 *
 * <p>Hand-written on plain sockets, like the fault proxy of the library's tests (whose relay this repeats in
 * outline: the test module cannot depend on this one): the JDK's HttpServer re-frames bodies and cannot pace them,
 * and Toxiproxy needs its own Go server.
 */
public final class WanLink implements AutoCloseable {

    private static final int CHUNK = 64 * 1024;

    private final ServerSocket server;
    private final URI upstream;
    private final long roundTripNanos;
    private final long bytesPerSecond;
    private final TokenBucket down;
    private final TokenBucket up;
    /**
     * Platform threads, not virtual ones: the relay stands for a network outside the process, so it must not wait
     * behind the client's virtual threads for one of the JVM's carriers (two on a two-core machine). On virtual
     * threads, a cache checksumming and writing its blocks on the same carriers delayed the relay's pacing, and
     * the link carried 8-9% less than its rate while plain downloads (no such work) got all of it.
     */
    private final ExecutorService threads = Executors.newCachedThreadPool(dev.memfit.Threads.daemon("memfit-wan-link"));
    /** The relays' sockets, closed by {@link #close}: interrupting a platform thread does not end its socket read. */
    private final java.util.Set<Socket> open = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong bytesDown = new AtomicLong();
    private final AtomicLong bytesUp = new AtomicLong();
    /** {@link System#nanoTime()} of the first connection since the last {@link #resetFirstConnection}; 0 before. */
    private final AtomicLong firstConnection = new AtomicLong();

    private WanLink(URI upstream, Duration roundTrip, long bytesPerSecond) throws IOException {
        this.upstream = upstream;
        this.roundTripNanos = roundTrip.toNanos();
        this.bytesPerSecond = bytesPerSecond;
        this.down = bytesPerSecond > 0 ? new TokenBucket(bytesPerSecond) : null;
        this.up = bytesPerSecond > 0 ? new TokenBucket(bytesPerSecond) : null;
        this.server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        threads.submit(this::accept);
    }

    /**
     * Starts a simulated link in front of a server.
     *
     * @param upstream the server, such as {@link LocalS3#endpoint()} ({@code http://host:port})
     * @param roundTrip the time added to every request (0 for none)
     * @param bytesPerSecond the bandwidth all connections share in each direction; 0 for no cap
     * @return the running link; point clients at {@link #endpoint()}
     */
    public static WanLink start(URI upstream, Duration roundTrip, long bytesPerSecond) {
        if (roundTrip.isNegative() || bytesPerSecond < 0) {
            throw new MemfitException("WanLink: the round trip and the bandwidth must not be negative, got " + roundTrip
                    + " and " + bytesPerSecond + " B/s");
        }
        if (!"http".equals(upstream.getScheme()) || upstream.getPort() < 0) {
            throw new MemfitException("WanLink: expected an upstream like http://127.0.0.1:9000, got " + upstream);
        }
        try {
            return new WanLink(upstream, roundTrip, bytesPerSecond);
        } catch (IOException e) {
            throw new MemfitException("WanLink: cannot listen on 127.0.0.1: " + e.getMessage(), e);
        }
    }

    /**
     * Where clients connect: {@code http://127.0.0.1:PORT}.
     *
     * @return the link's address
     */
    public URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    /**
     * The simulated round trip.
     *
     * @return the time added per request
     */
    public Duration roundTrip() {
        return Duration.ofNanos(roundTripNanos);
    }

    /**
     * The simulated bandwidth, shared by all connections (per direction).
     *
     * @return bytes per second, 0 for no cap
     */
    public long bytesPerSecond() {
        return bytesPerSecond;
    }

    /**
     * Requests relayed so far.
     *
     * @return the count
     */
    public long requests() {
        return requests.get();
    }

    /**
     * When the first client connected since {@link #resetFirstConnection()} (or since the link started): what a
     * process's time to its first request is measured against.
     *
     * @return {@link System#nanoTime()} at that connection, or 0 when none came
     */
    public long firstConnectionNanos() {
        return firstConnection.get();
    }

    /** Forgets the first connection, so that the next one is recorded. */
    public void resetFirstConnection() {
        firstConnection.set(0);
    }

    /**
     * Bytes relayed from the server to clients so far (response heads and bodies).
     *
     * @return bytes
     */
    public long bytesDown() {
        return bytesDown.get();
    }

    /**
     * Bytes relayed from clients to the server so far (request heads and bodies).
     *
     * @return bytes
     */
    public long bytesUp() {
        return bytesUp.get();
    }

    /**
     * What is simulated, for tables and notebooks: {@code simulated link: 20 ms round trip, 100 MiB/s shared}.
     *
     * @return the description
     */
    public String describe() {
        return String.format(Locale.ROOT, "simulated link: %s ms round trip, %s", trim(roundTripNanos / 1e6),
                bytesPerSecond > 0 ? trim(bytesPerSecond / 1048576.0) + " MiB/s shared" : "no bandwidth cap");
    }

    private static String trim(double value) {
        return value == Math.rint(value) ? Long.toString((long) value) : String.format(Locale.ROOT, "%.1f", value);
    }

    @Override
    public String toString() {
        return describe() + " at " + endpoint() + " -> " + upstream;
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                open.add(client);
                firstConnection.compareAndSet(0, System.nanoTime());
                threads.submit(() -> serve(client));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    /** Relays one request and its response, each delayed by half the round trip, bodies paced by the buckets. */
    private void serve(Socket client) {
        try (client; InputStream in = new BufferedInputStream(client.getInputStream(), CHUNK);
             OutputStream out = client.getOutputStream()) {
            client.setTcpNoDelay(true);
            String head = readHead(in);
            if (head == null) {
                return;
            }
            requests.incrementAndGet();
            StringBuilder forwarded = new StringBuilder();
            for (String line : head.split("\r\n")) {
                if (!line.isEmpty() && !line.toLowerCase(Locale.ROOT).startsWith("connection:")) {
                    forwarded.append(line).append("\r\n");
                }
            }
            byte[] requestHead = forwarded.append("Connection: close\r\n\r\n").toString().getBytes(StandardCharsets.ISO_8859_1);
            SlowStorage.parkUntil(System.nanoTime() + roundTripNanos / 2);
            try (Socket server = new Socket(upstream.getHost(), upstream.getPort())) {
                open.add(server);
                server.setTcpNoDelay(true);
                OutputStream upOut = server.getOutputStream();
                bytesUp.addAndGet(requestHead.length);
                upOut.write(requestHead);
                upOut.flush();
                // the request body (any framing) flows up beside the response until one side closes
                threads.submit(() -> pump(in, upOut, up, bytesUp, server));
                InputStream upIn = new BufferedInputStream(server.getInputStream(), CHUNK);
                String responseHead = readHead(upIn);
                if (responseHead == null) {
                    return;
                }
                SlowStorage.parkUntil(System.nanoTime() + roundTripNanos / 2);
                byte[] headBytes = responseHead.getBytes(StandardCharsets.ISO_8859_1);
                // counted before it is sent: a client that has every byte must find them counted
                bytesDown.addAndGet(headBytes.length);
                out.write(headBytes);
                pump(upIn, out, down, bytesDown, null);
            } finally {
                open.removeIf(socket -> socket.isClosed());
            }
        } catch (IOException e) {
            // a client or server that went away: nothing more to relay
        } finally {
            open.remove(client);
        }
    }

    /** Copies until the end of the stream, each chunk sent when the bucket allows; closes {@code closeAtEnd} then. */
    private static void pump(InputStream from, OutputStream to, TokenBucket bucket, AtomicLong counter, Socket closeAtEnd) {
        byte[] buffer = new byte[CHUNK];
        try {
            int n;
            while ((n = from.read(buffer)) > 0) {
                if (bucket != null) {
                    SlowStorage.parkUntil(bucket.reserve(n));
                }
                counter.addAndGet(n);     // before the write: the receiver may read the chunk before this thread runs on
                to.write(buffer, 0, n);
                to.flush();
            }
            if (closeAtEnd != null) {
                closeAtEnd.shutdownOutput();
            }
        } catch (IOException e) {
            // the other side closed: the exchange is over
        }
    }

    /**
     * A bandwidth cap shared by threads: each chunk reserves its transfer time on one virtual timeline and is sent when
     * its turn starts; an idle link saves up at most {@value #BURST_NANOS} ns of credit.
     */
    static final class TokenBucket {
        static final long BURST_NANOS = 5_000_000L;
        private final double nanosPerByte;
        private long nextFree = Long.MIN_VALUE;

        TokenBucket(long bytesPerSecond) {
            this.nanosPerByte = 1e9 / bytesPerSecond;
        }

        /** Reserves {@code bytes} on the link; returns the {@link System#nanoTime()} at which they may be sent. */
        synchronized long reserve(long bytes) {
            long now = System.nanoTime();
            long start = nextFree == Long.MIN_VALUE ? now - BURST_NANOS : Math.max(nextFree, now - BURST_NANOS);
            nextFree = start + (long) (bytes * nanosPerByte);
            return start;
        }
    }

    /** Reads up to and including the blank line ending an HTTP head, or null at the end of the stream. */
    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream(512);
        int matched = 0;
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                return null;
            }
            head.write(b);
            matched = (b == '\r' && (matched == 0 || matched == 2)) || (b == '\n' && (matched == 1 || matched == 3))
                    ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    /** Stops accepting connections and ends the relays in progress (their sockets closed: a blocked read ends). */
    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException ignored) {
            // closing a listening socket
        }
        for (Socket socket : open) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing
            }
        }
        threads.shutdownNow();
    }
}
