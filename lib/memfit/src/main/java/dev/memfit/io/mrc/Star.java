package dev.memfit.io.mrc;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reads RELION STAR files: the subset of STAR/CIF that RELION writes and that RELION, gemmi and the Python
 * {@code starfile} package read.
 *
 * <p>The grammar: {@code data_NAME} blocks (the name may be empty), {@code loop_} tables whose column headers are
 * tags such as {@code _rlnImageName #1}, key-value pairs {@code _tag value} outside loops, comments from a {@code #}
 * that starts a token to the end of the line, blank lines, and values that are bare words or quoted with single or
 * double quotes. As in CIF, a quote only closes a value when whitespace or the end of the line follows it, so
 * {@code 'it's here'} is the value {@code it's here}; a quoted {@code _tag}, {@code loop_} or {@code data_} is a
 * plain value. The optics table of RELION 3.1+ is just another block ({@code data_optics} before
 * {@code data_particles}). Lines end with LF or CRLF.
 *
 * <p>Stricter than CIF in one way, as RELION itself reads: each row of a loop is one line, and a line whose value
 * count differs from the column count is an error naming the file and the line (CIF would silently shift the
 * remaining values into the wrong columns). Not supported, each with a clear error: multi-line {@code ;text;}
 * fields, {@code save_} frames, {@code global_} and {@code stop_}.
 *
 * <p>Hand-written rather than taken from a library: the maintained Java CIF reader on Maven Central
 * ({@code org.rcsb:ciftools-java}) reads the whole file into one string, treats a loop as a stream of values
 * without line numbers, and so cannot report a short row (see the issue note).
 *
 * <pre>{@code
 * for (Star.Block block : Star.read(Path.of("run_data.star"))) {
 *     Star.Loop particles = block.loop("_rlnImageName");   // null when the block has no such column
 * }
 * }</pre>
 */
public final class Star {

    /** At most this many characters of an offending line are quoted in a message. */
    private static final int QUOTE_CHARS = 160;

    private Star() {
    }

    /**
     * Receives what a STAR file holds, in file order, without keeping it in memory.
     */
    public interface Handler {

        /**
         * A {@code data_} block starts.
         *
         * @param name the text after {@code data_}, possibly empty
         * @param line the line number, from 1
         */
        default void block(String name, long line) {
        }

        /**
         * A key-value pair outside a loop.
         *
         * @param block the block's name
         * @param tag the tag with its leading underscore, such as {@code _rlnOpticsGroup}
         * @param value the value, without quotes
         * @param line the line number
         */
        default void pair(String block, String tag, String value, long line) {
        }

        /**
         * A loop's column headers are complete; its rows follow.
         *
         * @param block the block's name
         * @param columns the tags, with their leading underscores, in order
         * @param line the line of {@code loop_}
         */
        default void loop(String block, List<String> columns, long line) {
        }

        /**
         * One row of the current loop; its value count has been checked against the columns.
         *
         * @param values the values, without quotes (a view valid only during the call)
         * @param line the line number
         */
        default void row(List<String> values, long line) {
        }
    }

    /**
     * A loop table held in memory.
     *
     * @param columns the tags, with leading underscores
     * @param rows the values of each row
     * @param line the line of {@code loop_}
     */
    public record Loop(List<String> columns, List<List<String>> rows, long line) {

        /**
         * The index of a column.
         *
         * @param tag such as {@code _rlnImageName}
         * @return its index, or -1
         */
        public int column(String tag) {
            return columns.indexOf(tag);
        }
    }

    /**
     * A data block held in memory.
     *
     * @param name the text after {@code data_}
     * @param pairs the key-value pairs, in file order
     * @param loops the loops, in file order
     */
    public record Block(String name, Map<String, String> pairs, List<Loop> loops) {

        /**
         * The first loop that has a column.
         *
         * @param tag such as {@code _rlnImageName}
         * @return the loop, or null
         */
        public Loop loop(String tag) {
            for (Loop loop : loops) {
                if (loop.column(tag) >= 0) {
                    return loop;
                }
            }
            return null;
        }
    }

    /**
     * Reads a whole file into memory; for large particle tables prefer {@link #read(Path, Handler)}.
     *
     * @param file the {@code .star} file
     * @return its blocks, in file order
     * @throws InvalidFileException naming the file and line of the first syntax error
     */
    public static List<Block> read(Path file) {
        List<Block> blocks = new ArrayList<>();
        read(file, new Handler() {
            private Map<String, String> pairs;
            private List<Loop> loops;
            private List<List<String>> rows;

            @Override
            public void block(String name, long line) {
                pairs = new LinkedHashMap<>();
                loops = new ArrayList<>();
                blocks.add(new Block(name, Collections.unmodifiableMap(pairs), Collections.unmodifiableList(loops)));
            }

            @Override
            public void pair(String block, String tag, String value, long line) {
                pairs.put(tag, value);
            }

            @Override
            public void loop(String block, List<String> columns, long line) {
                rows = new ArrayList<>();
                loops.add(new Loop(List.copyOf(columns), Collections.unmodifiableList(rows), line));
            }

            @Override
            public void row(List<String> values, long line) {
                rows.add(List.copyOf(values));
            }
        });
        return blocks;
    }

    /**
     * Reads a file line by line, handing each block, pair, loop header and row to a handler.
     *
     * @param file the {@code .star} file
     * @param handler what receives the content
     * @throws InvalidFileException naming the file and line of the first syntax error
     * @throws MemfitException when the file is missing or is a folder
     */
    public static void read(Path file, Handler handler) {
        if (Files.isDirectory(file)) {
            throw new MemfitException(file + ": expected a RELION .star file, found a folder");
        }
        try (BufferedReader reader = Files.newBufferedReader(file)) {
            new Parser(file, handler).parse(reader);
        } catch (NoSuchFileException e) {
            throw new MemfitException(file + ": no such file", e);
        } catch (CharacterCodingException e) {
            throw new InvalidFileException(file, -1, "a UTF-8 text file", "bytes that are not UTF-8 text (a binary file?)", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /**
     * Reads a file through a storage line by line (such as a {@code .star} in a bucket through an object cache, its
     * path in the form {@code s3:/bucket/key}), in reads of 1 MiB, handing its content to a handler.
     *
     * @param file the {@code .star} file or object
     * @param storage where the bytes come from
     * @param handler what receives the content
     * @throws InvalidFileException naming the file and line of the first syntax error
     */
    public static void read(Path file, dev.memfit.io.storage.Storage storage, Handler handler) {
        long size = storage.size(file);
        java.io.InputStream bytes = new java.io.InputStream() {
            private final java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
            private final java.lang.foreign.MemorySegment buffer = arena.allocate(1 << 20);
            private long position;
            /** The file's bytes [bufferStart, bufferStart + buffered) are in the buffer. */
            private long bufferStart;
            private long buffered;

            @Override
            public int read() {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] into, int offset, int length) {
                if (position >= size) {
                    return -1;
                }
                if (position >= bufferStart + buffered) {
                    // one storage read per MiB, whatever size the decoder asks for (8 KiB): a request each otherwise
                    bufferStart = position;
                    buffered = Math.min(buffer.byteSize(), size - position);
                    storage.read(file, position, buffer.asSlice(0, buffered));
                }
                int n = (int) Math.min(length, bufferStart + buffered - position);
                java.lang.foreign.MemorySegment.copy(buffer, java.lang.foreign.ValueLayout.JAVA_BYTE,
                        position - bufferStart, into, offset, n);
                position += n;
                return n;
            }

            @Override
            public void close() {
                arena.close();
            }
        };
        // a strict decoder, as Files.newBufferedReader uses: bytes that are not UTF-8 are reported, not replaced
        try (BufferedReader reader = new BufferedReader(new java.io.InputStreamReader(bytes,
                java.nio.charset.StandardCharsets.UTF_8.newDecoder()), 1 << 16)) {
            new Parser(file, handler).parse(reader);
        } catch (CharacterCodingException e) {
            throw new InvalidFileException(file, -1, "a UTF-8 text file", "bytes that are not UTF-8 text (a binary file?)", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /** The state machine over lines; one instance per file. */
    private static final class Parser {

        private enum State { OUTSIDE, BLOCK, HEADER, ROWS }

        private final Path file;
        private final Handler handler;
        private final List<String> tokens = new ArrayList<>();
        private final List<Boolean> quoted = new ArrayList<>();
        private final List<String> columns = new ArrayList<>();
        private State state = State.OUTSIDE;
        private String block;
        private long loopLine;
        private long lineNumber;

        Parser(Path file, Handler handler) {
            this.file = file;
            this.handler = handler;
        }

        void parse(BufferedReader reader) throws IOException {
            String line;
            while ((line = reader.readLine()) != null) {
                lineNumber++;
                if (lineNumber == 1 && line.startsWith("\uFEFF")) {
                    line = line.substring(1);
                }
                tokenize(line);
                if (!tokens.isEmpty()) {
                    line(line);
                }
            }
            if (state == State.HEADER) {
                endHeader();
            }
        }

        private void line(String text) {
            int k = 0;
            if (state == State.ROWS) {
                if (isKeyword(0)) {
                    state = State.BLOCK;
                } else {
                    row(text, 0);
                    return;
                }
            }
            while (k < tokens.size()) {
                String token = tokens.get(k);
                boolean bare = !quoted.get(k);
                String lower = bare ? token.toLowerCase(Locale.ROOT) : "";
                if (bare && lower.startsWith("data_")) {
                    if (state == State.HEADER) {
                        endHeader();
                    }
                    block = token.substring(5);
                    state = State.BLOCK;
                    handler.block(block, lineNumber);
                    k++;
                } else if (bare && (lower.startsWith("save_") || lower.equals("global_") || lower.equals("stop_"))) {
                    throw error("data_, loop_, a _tag or a value (RELION files have no save frames, global_ or stop_)",
                            "'" + token + "'", text);
                } else if (state == State.OUTSIDE) {
                    throw error("a data_ block before any content", "'" + token + "'", text);
                } else if (bare && lower.equals("loop_")) {
                    if (state == State.HEADER) {
                        endHeader();
                    }
                    state = State.HEADER;
                    columns.clear();
                    loopLine = lineNumber;
                    k++;
                } else if (state == State.HEADER) {
                    if (bare && token.startsWith("_")) {
                        if (columns.contains(token)) {
                            throw error("each column of the loop_ on line " + loopLine + " once", "'" + token + "' twice", text);
                        }
                        columns.add(token);
                        k++;
                    } else {
                        endHeader();
                        row(text, k);
                        return;
                    }
                } else if (bare && token.startsWith("_")) {
                    if (k + 1 >= tokens.size() || isKeyword(k + 1)) {
                        throw error("a value after " + token + " on the same line",
                                k + 1 >= tokens.size() ? "the end of the line" : "'" + tokens.get(k + 1) + "'", text);
                    }
                    handler.pair(block, token, tokens.get(k + 1), lineNumber);
                    k += 2;
                } else {
                    throw error("data_, loop_ or a _tag (a value belongs after its _tag or in a loop_ row)",
                            "the value '" + token + "'", text);
                }
            }
        }

        /** Ends a loop header: a loop needs at least one column; rows follow. */
        private void endHeader() {
            if (columns.isEmpty()) {
                throw new InvalidFileException(file, -1, "column tags (_rlnName) after the loop_ on line " + loopLine,
                        "none");
            }
            handler.loop(block, Collections.unmodifiableList(columns), loopLine);
            state = State.ROWS;
        }

        private void row(String text, int from) {
            int count = tokens.size() - from;
            if (count != columns.size()) {
                throw error(columns.size() + " values, one per column of the loop_ on line " + loopLine + " ("
                        + String.join(" ", columns.size() <= 8 ? columns : columns.subList(0, 8))
                        + (columns.size() > 8 ? " ..." : "") + ")", count + " values", text);
            }
            handler.row(Collections.unmodifiableList(tokens.subList(from, tokens.size())), lineNumber);
        }

        /** A bare token that starts something other than a row value: a tag or a reserved word. */
        private boolean isKeyword(int k) {
            if (quoted.get(k)) {
                return false;
            }
            String lower = tokens.get(k).toLowerCase(Locale.ROOT);
            return lower.startsWith("_") || lower.startsWith("data_") || lower.equals("loop_")
                    || lower.startsWith("save_") || lower.equals("global_") || lower.equals("stop_");
        }

        /** Splits a line into values: bare words, quoted strings (CIF rules) and a trailing comment. */
        private void tokenize(String line) {
            tokens.clear();
            quoted.clear();
            int n = line.length();
            int i = 0;
            while (i < n) {
                char c = line.charAt(i);
                if (c == 0) {
                    throw error("text", "a NUL byte at column " + (i + 1) + " (a binary file?)", "");
                }
                if (isSpace(c)) {
                    i++;
                } else if (c == '#') {
                    return;
                } else if (c == '\'' || c == '"') {
                    int end = i + 1;
                    while (end < n && !(line.charAt(end) == c && (end + 1 == n || isSpace(line.charAt(end + 1))))) {
                        end++;
                    }
                    if (end >= n) {
                        throw error("a closing " + c + " followed by a space or the end of the line",
                                "an unterminated quoted value starting at column " + (i + 1), line);
                    }
                    tokens.add(line.substring(i + 1, end));
                    quoted.add(Boolean.TRUE);
                    i = end + 1;
                } else if (c == ';' && i == 0) {
                    throw error("a value (RELION files have no multi-line ;text; fields)", "a line starting with ';'", line);
                } else {
                    int end = i;
                    while (end < n && !isSpace(line.charAt(end))) {
                        if (line.charAt(end) == 0) {
                            throw error("text", "a NUL byte at column " + (end + 1) + " (a binary file?)", "");
                        }
                        end++;
                    }
                    tokens.add(line.substring(i, end));
                    quoted.add(Boolean.FALSE);
                    i = end;
                }
            }
        }

        private static boolean isSpace(char c) {
            return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == 0x0B;
        }

        private InvalidFileException error(String expected, String found, String text) {
            String quote = text.isEmpty() ? "" : ": '" + (text.length() > QUOTE_CHARS
                    ? text.substring(0, QUOTE_CHARS) + "...'" : text + "'");
            return new InvalidFileException(file, -1, "on line " + lineNumber + " " + expected, found + quote);
        }
    }
}
