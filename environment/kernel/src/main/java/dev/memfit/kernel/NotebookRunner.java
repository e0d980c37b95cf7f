package dev.memfit.kernel;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.JShellException;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;

/**
 * Runs a notebook's code cells in order in one JShell, for machines with Java but no Jupyter (a GPU machine, say):
 * the same class path as the kernel ({@code RJK_CLASSPATH}), the same default imports, and the kernel's way of
 * showing a cell's result: a cell whose last statement is an image (memfit's charts return a {@code BufferedImage})
 * has it saved as {@code cell-NN.png}. Everything the cells print goes to the console and to {@code output.txt}, and
 * the notebook is written back as {@code NAME.ipynb} in the output folder with each cell's printed text and image as
 * its outputs (as Jupyter would have saved it; {@code environment/render_notebooks.py} turns it into HTML).
 * Stops at the first cell that fails to compile or throws (a failed {@code Lesson.expect} among them), exit status 1.
 *
 * <p>Run it from the notebook's folder (the kernel's working directory, against which the notebooks' relative paths
 * are written), with the kernel's JVM flags and the cells' jars on the JVM's own class path as well (JShell's local
 * engine resolves the classes it rewrites through it: without them a cell can fail with "Could not resolve class"):
 * {@code ./memfit notebooks --jshell} does.
 *
 * <pre>{@code
 * java -cp memfit-kernel.jar:rapaio-jupyter-kernel.jar dev.memfit.kernel.NotebookRunner NOTEBOOK.ipynb OUT_DIR
 * }</pre>
 */
public final class NotebookRunner {

    /** The rapaio kernel's start-up imports (its init.jshell, less its own display helpers). */
    static final List<String> DEFAULT_IMPORTS = List.of("java.util.*", "java.io.*", "java.math.*", "java.net.*",
            "java.util.concurrent.*", "java.util.prefs.*", "java.util.regex.*");

    private final Path out;
    private final PrintStream console;

    NotebookRunner(Path out, PrintStream console) {
        this.out = out;
        this.console = console;
    }

    /**
     * Runs one notebook.
     *
     * @param args the notebook and the folder for its images and output
     */
    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: NotebookRunner NOTEBOOK.ipynb OUT_DIR   (class path for the cells: RJK_CLASSPATH)");
            System.exit(2);
        }
        PrintStream console = System.out;
        try {
            Result result = new NotebookRunner(Path.of(args[1]), console).run(Path.of(args[0]),
                    System.getenv().getOrDefault("RJK_CLASSPATH", ""));
            System.setOut(console);
            System.exit(result.failure() == null ? 0 : 1);
        } catch (IOException | UncheckedIOException e) {
            System.setOut(console);
            System.err.println("memfit notebook runner: " + e.getMessage());
            System.exit(2);
        }
    }

    /**
     * What a run did: the images saved, and the first failure (null when every cell ran).
     *
     * @param images the PNG files written, in cell order
     * @param cells the code cells run (the failing one included)
     * @param failure what went wrong, in words, or null
     */
    record Result(List<Path> images, int cells, String failure) {
    }

    /**
     * Runs the code cells of a notebook in one JShell whose class path is {@code classPath}.
     *
     * @param notebook the .ipynb file
     * @param classPath jars and folders separated by ':'; an entry ending in {@code *.jar} or {@code *} is every jar
     *                  of its folder, as in the kernel's {@code RJK_CLASSPATH}
     * @return what ran and what failed
     * @throws IOException when the notebook cannot be read or the output folder written
     */
    Result run(Path notebook, String classPath) throws IOException {
        JsonObject executed = JsonParser.parseString(Files.readString(notebook)).getAsJsonObject();
        for (JsonElement cell : executed.getAsJsonArray("cells")) {   // as nbformat requires of every code cell
            JsonObject code = cell.getAsJsonObject();
            if ("code".equals(code.get("cell_type").getAsString())) {
                code.add("execution_count", com.google.gson.JsonNull.INSTANCE);
                code.add("outputs", new JsonArray());
            }
        }
        List<String> cells = codeCells(notebook);
        Files.createDirectories(out);
        List<Path> images = new ArrayList<>();
        Path log = out.resolve("output.txt");
        ByteArrayOutputStream cellText = new ByteArrayOutputStream();
        try (OutputStream file = Files.newOutputStream(log);
             PrintStream both = new PrintStream(new Tee(console, new Tee(file, cellText)), true, StandardCharsets.UTF_8);
             JShell shell = JShell.builder().executionEngine("local").out(both).err(both).build()) {
            // local execution: the cells run in this JVM, as in the kernel, and print straight to System.out
            System.setOut(both);
            for (String entry : expand(classPath)) {
                shell.addToClasspath(entry);
            }
            for (String name : DEFAULT_IMPORTS) {
                requireDefined(shell, shell.eval("import " + name + ";"), "import " + name);
            }
            // the kernel's display(...): an image saved as the cell's picture, anything else printed
            requireDefined(shell, shell.eval("void display(Object shown) { " + NotebookRunner.class.getName()
                    + ".display(shown); }"), "display(Object)");
            current = new Displays(out, images);
            int ran = 0;
            for (int index = 0; index < cells.size(); index++) {
                String source = cells.get(index);
                if (source.isBlank()) {
                    continue;
                }
                ran++;
                both.printf("---- cell %d ----%n", index);
                cellText.reset();
                int imagesBefore = images.size();
                current.cell = index;
                String failure;
                try {
                    failure = runCell(shell, source, index, images);
                } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {   // JShell itself failed, or the JVM ran out
                    failure = "JShell failed: " + e;
                }
                both.flush();
                Path image = images.size() > imagesBefore ? images.getLast() : null;
                recordOutputs(executed, index, ran, cellText.toString(StandardCharsets.UTF_8), image, failure);
                if (failure != null) {
                    both.printf("FAILED at cell %d: %s%n", index, failure);
                    writeExecuted(executed, notebook);
                    return new Result(images, ran, "cell " + index + ": " + failure);
                }
            }
            writeExecuted(executed, notebook);
            both.printf("---- %d code cells ran, %d image(s) in %s ----%n", ran, images.size(), out);
            return new Result(images, ran, null);
        } finally {
            System.setOut(console);
        }
    }

    /**
     * Sets a code cell's outputs as Jupyter saves them: its printed text as a stdout stream (the runner's own
     * "---- cell" line left out), its image as display data, a failure as an error output.
     */
    private static void recordOutputs(JsonObject notebook, int index, int count, String text, Path image, String failure)
            throws IOException {
        JsonObject cell = notebook.getAsJsonArray("cells").get(index).getAsJsonObject();
        JsonArray outputs = new JsonArray();
        String header = String.format("---- cell %d ----%n", index);
        String printed = text.startsWith(header) ? text.substring(header.length()) : text;
        if (!printed.isEmpty()) {
            JsonObject stream = new JsonObject();
            stream.addProperty("output_type", "stream");
            stream.addProperty("name", "stdout");
            stream.addProperty("text", printed);
            outputs.add(stream);
        }
        if (image != null) {
            JsonObject data = new JsonObject();
            data.addProperty("image/png", Base64.getEncoder().encodeToString(Files.readAllBytes(image)));
            JsonObject display = new JsonObject();
            display.addProperty("output_type", "display_data");
            display.add("data", data);
            display.add("metadata", new JsonObject());
            outputs.add(display);
        }
        if (failure != null) {
            JsonObject error = new JsonObject();
            error.addProperty("output_type", "error");
            String firstLine = failure.lines().findFirst().orElse(failure);
            int colon = firstLine.indexOf(':');
            error.addProperty("ename", colon > 0 ? firstLine.substring(0, colon) : "Error");
            error.addProperty("evalue", colon > 0 ? firstLine.substring(colon + 1).strip() : firstLine);
            JsonArray traceback = new JsonArray();
            failure.lines().forEach(traceback::add);
            error.add("traceback", traceback);
            outputs.add(error);
        }
        cell.add("outputs", outputs);
        cell.addProperty("execution_count", count);
    }

    /** Writes the notebook with its outputs as {@code NAME.ipynb} in the output folder (a temporary name, then renamed). */
    private void writeExecuted(JsonObject notebook, Path source) throws IOException {
        Path target = out.resolve(source.getFileName().toString());
        Path partial = out.resolve(source.getFileName() + ".partial");
        Files.writeString(partial, new com.google.gson.GsonBuilder().setPrettyPrinting().disableHtmlEscaping().serializeNulls().create()
                .toJson(notebook) + System.lineSeparator());
        Files.move(partial, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    /** Where {@link #display} puts what a cell shows: the run going on (one at a time in a JVM). */
    private static volatile Displays current;

    /** The pictures of the notebook being run, and the cell running. */
    private static final class Displays {
        private final Path out;
        private final List<Path> images;
        private int cell;
        private int shown;

        Displays(Path out, List<Path> images) {
            this.out = out;
            this.images = images;
        }
    }

    /**
     * What a cell's {@code display(x)} does here, as in the kernel: an image is saved as one of the cell's pictures,
     * anything else is printed.
     *
     * @param shown the value shown
     * @throws java.io.UncheckedIOException when the image cannot be written
     */
    public static void display(Object shown) {
        Displays displays = current;
        if (displays != null && shown instanceof java.awt.image.RenderedImage image) {
            Path png = displays.out.resolve(String.format(Locale.ROOT, "cell-%02d-%d.png", displays.cell, ++displays.shown))
                    .toAbsolutePath();
            try {
                javax.imageio.ImageIO.write(image, "png", png.toFile());
            } catch (IOException e) {
                throw new java.io.UncheckedIOException("could not write " + png, e);
            }
            displays.images.add(png);
            return;
        }
        System.out.println(shown);
    }

    /** Runs one cell snippet by snippet; saves its last value when it is an image. Returns a failure, or null. */
    private String runCell(JShell shell, String source, int index, List<Path> images) {
        SourceCodeAnalysis analysis = shell.sourceCodeAnalysis();
        String remaining = source;
        Snippet last = null;
        String lastValue = null;
        while (!remaining.isBlank()) {
            SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(remaining);
            if (!info.completeness().isComplete()) {
                return "incomplete source: " + remaining.strip();
            }
            for (SnippetEvent event : shell.eval(info.source())) {
                String failure = failure(shell, event);
                if (failure != null) {
                    return failure;
                }
                if (event.causeSnippet() == null) {
                    last = event.snippet();
                    lastValue = event.value();
                }
            }
            remaining = info.remaining();
        }
        String name = last == null ? null : variableName(last);
        if (name != null) {
            if ("true".equals(value(shell, "((Object) " + name + ") instanceof java.awt.image.RenderedImage"))) {
                Path png = out.resolve(String.format(Locale.ROOT, "cell-%02d.png", index)).toAbsolutePath();
                String write = "javax.imageio.ImageIO.write((java.awt.image.RenderedImage) " + name + ", \"png\", new java.io.File("
                        + javaString(png.toString()) + "))";
                if (!"true".equals(value(shell, write))) {
                    return "could not write " + png;
                }
                images.add(png);
                console.printf("[image: %s]%n", png);
            } else if (lastValue != null && (last instanceof jdk.jshell.ExpressionSnippet
                    || last.subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND)) {
                System.out.println(lastValue);   // the kernel shows a final expression's value as the cell's result
            }
        }
        return null;
    }

    /** The name a value snippet can be referred to by: the temporary $N of an expression, or the variable. */
    private static String variableName(Snippet snippet) {
        if (snippet instanceof jdk.jshell.VarSnippet variable) {
            return variable.name();
        }
        if (snippet instanceof jdk.jshell.ExpressionSnippet expression) {
            return expression.name();
        }
        return null;
    }

    private static String value(JShell shell, String expression) {
        String result = null;
        for (SnippetEvent event : shell.eval(expression + ";")) {
            if (event.causeSnippet() == null && event.exception() == null) {
                result = event.value();
            }
        }
        return result;
    }

    private static void requireDefined(JShell shell, List<SnippetEvent> events, String what) {
        for (SnippetEvent event : events) {
            String failure = failure(shell, event);
            if (failure != null) {
                throw new IllegalStateException(what + ": " + failure);
            }
        }
    }

    /** What went wrong with a snippet: a compile error or an exception, in words; null when it ran. */
    static String failure(JShell shell, SnippetEvent event) {
        JShellException thrown = event.exception();
        if (thrown != null) {
            String type = thrown instanceof EvalException eval ? eval.getExceptionClassName() : thrown.getClass().getName();
            StringBuilder text = new StringBuilder(type + ": " + thrown.getMessage());
            for (StackTraceElement frame : thrown.getStackTrace()) {
                String file = frame.getFileName();
                if (frame.getClassName().isEmpty() || frame.getClassName().startsWith("REPL.") || file != null && file.startsWith("#")) {
                    break;   // the cell's own frames (JShell names them #<snippet id>): below them is JShell
                }
                text.append(System.lineSeparator()).append("    at ").append(frame);
            }
            return text.toString();
        }
        if (event.status() == Snippet.Status.REJECTED) {
            StringBuilder text = new StringBuilder("does not compile: " + event.snippet().source().strip());
            shell.diagnostics(event.snippet()).forEach((Diag diag) -> text.append(System.lineSeparator()).append("    ")
                    .append(diag.getMessage(Locale.ROOT)));
            return text.toString();
        }
        return null;
    }

    /** The sources of a notebook's code cells, in order; markdown cells are empty strings (keeping cell numbers). */
    static List<String> codeCells(Path notebook) throws IOException {
        JsonObject root = JsonParser.parseString(Files.readString(notebook)).getAsJsonObject();
        List<String> sources = new ArrayList<>();
        for (JsonElement element : root.getAsJsonArray("cells")) {
            JsonObject cell = element.getAsJsonObject();
            if (!"code".equals(cell.get("cell_type").getAsString())) {
                sources.add("");
                continue;
            }
            JsonElement source = cell.get("source");
            if (source.isJsonArray()) {
                StringBuilder text = new StringBuilder();
                for (JsonElement line : (JsonArray) source) {
                    text.append(line.getAsString());
                }
                sources.add(text.toString());
            } else {
                sources.add(source.getAsString());
            }
        }
        return sources;
    }

    /** The kernel's class path entries, with {@code dir/*.jar} and {@code dir/*} expanded to the jars, sorted. */
    static List<String> expand(String classPath) throws IOException {
        List<String> entries = new ArrayList<>();
        for (String entry : classPath.split(":")) {
            if (entry.isBlank()) {
                continue;
            }
            if (entry.endsWith("/*.jar") || entry.endsWith("/*")) {
                Path folder = Path.of(entry.substring(0, entry.lastIndexOf('/')));
                List<String> jars = new ArrayList<>();
                try (DirectoryStream<Path> stream = Files.newDirectoryStream(folder, "*.jar")) {
                    stream.forEach(jar -> jars.add(jar.toString()));
                }
                jars.sort(null);
                entries.addAll(jars);
            } else {
                entries.add(entry);
            }
        }
        return entries;
    }

    private static String javaString(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /** Writes to the console and to a file. */
    private static final class Tee extends OutputStream {
        private final OutputStream first;
        private final OutputStream second;

        Tee(OutputStream first, OutputStream second) {
            this.first = first;
            this.second = second;
        }

        @Override
        public void write(int b) throws IOException {
            first.write(b);
            second.write(b);
        }

        @Override
        public void write(byte[] bytes, int offset, int length) throws IOException {
            first.write(bytes, offset, length);
            second.write(bytes, offset, length);
        }

        @Override
        public void flush() throws IOException {
            first.flush();
            second.flush();
        }
    }
}
