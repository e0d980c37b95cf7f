package dev.memfit.cloud;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A tiny HTTP proxy on 127.0.0.1 in front of an S3 server that misbehaves on request: it answers the next GET
 * requests with {@code 503 SlowDown}, drops the connection without an answer, or cuts a response after part of its
 * body. Everything else is relayed byte for byte (SigV4 signatures stay valid: only the unsigned {@code Connection}
 * header is set to {@code close}, so each response ends with the upstream connection).
 *
 * <p>Hand-written on plain sockets: the JDK's HttpServer re-frames requests and responses (it cannot cut a body at a
 * chosen byte or relay the signed request unchanged), and the fault proxies on Central (Toxiproxy needs its Go
 * server, WireMock brings Jetty and cannot count faults per request kind this simply).
 */
final class FaultProxy implements AutoCloseable {

    private final ServerSocket server;
    private final URI upstream;
    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    /** GET requests still to answer with 503 SlowDown. */
    final AtomicInteger slowDowns = new AtomicInteger();
    /** GET requests still to drop before any answer. */
    final AtomicInteger drops = new AtomicInteger();
    /** GET responses still to cut after {@link #cutAfterBytes} bytes of body. */
    final AtomicInteger cuts = new AtomicInteger();
    volatile int cutAfterBytes = 1000;
    /** Faults injected so far. */
    final AtomicInteger injected = new AtomicInteger();
    /** The {@code Range} header of every GET request received (empty when it has none), in arrival order. */
    final java.util.Queue<String> getRanges = new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** Milliseconds every GET waits before it is relayed: a slow link, so that downloads overlap. */
    volatile long getDelayMillis;
    /** While true, GET requests wait before they are relayed: a download that hangs. */
    volatile boolean stallGets;

    FaultProxy(URI upstream) throws IOException {
        this.upstream = upstream;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads.submit(this::accept);
    }

    URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                threads.submit(() -> serve(client));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void serve(Socket client) {
        try (client; InputStream in = client.getInputStream(); OutputStream out = client.getOutputStream()) {
            String head = readHead(in);
            if (head == null) {
                return;
            }
            boolean get = head.startsWith("GET ");
            if (get) {
                getRanges.add(header(head, "range:"));
                Thread.sleep(getDelayMillis);
                while (stallGets) {
                    Thread.sleep(5);
                }
            }
            if (get && take(drops)) {
                return; // close without an answer
            }
            if (get && take(slowDowns)) {
                byte[] body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
                        + "<Message>Please reduce your request rate.</Message></Error>").getBytes(StandardCharsets.UTF_8);
                out.write(("HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: " + body.length
                        + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
                return;
            }
            long requestBody = contentLength(head);
            StringBuilder forwarded = new StringBuilder();
            for (String line : head.split("\r\n")) {
                if (!line.toLowerCase().startsWith("connection:")) {
                    forwarded.append(line).append("\r\n");
                }
            }
            forwarded.append("Connection: close\r\n\r\n");
            try (Socket up = new Socket(upstream.getHost(), upstream.getPort())) {
                OutputStream upOut = up.getOutputStream();
                upOut.write(forwarded.toString().getBytes(StandardCharsets.ISO_8859_1));
                upOut.write(in.readNBytes(Math.toIntExact(requestBody)));
                upOut.flush();
                InputStream upIn = up.getInputStream();
                String responseHead = readHead(upIn);
                if (responseHead == null) {
                    return;
                }
                out.write(responseHead.getBytes(StandardCharsets.ISO_8859_1));
                if (get && responseHead.startsWith("HTTP/1.1 2") && take(cuts)) {
                    out.write(upIn.readNBytes(cutAfterBytes));
                    out.flush();
                    client.setSoLinger(true, 0); // reset: the client sees the connection dropped mid-body
                    return;
                }
                upIn.transferTo(out);
                out.flush();
            }
        } catch (IOException e) {
            // a client or server that went away: nothing to relay
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // closed
        }
    }

    private static String header(String head, String name) {
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase().startsWith(name)) {
                return line.substring(name.length()).strip();
            }
        }
        return "";
    }

    private boolean take(AtomicInteger counter) {
        if (counter.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            injected.incrementAndGet();
            return true;
        }
        return false;
    }

    /** Reads up to and including the blank line ending the head, or null at the end of the stream. */
    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
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

    private static long contentLength(String head) {
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase().startsWith("content-length:")) {
                return Long.parseLong(line.substring(15).strip());
            }
        }
        return 0;
    }

    @Override
    public void close() throws IOException {
        server.close();
        threads.shutdownNow();
    }
}
