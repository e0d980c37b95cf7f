package dev.memfit.kernel;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NotebookRunnerTest {

    /** A notebook in nbformat 4 as Jupyter writes it: sources as lists of lines, a markdown cell first. */
    private static Path notebook(Path dir, String... codeCells) throws IOException {
        StringBuilder cells = new StringBuilder("{\"cell_type\": \"markdown\", \"metadata\": {}, \"source\": [\"# Title\"]}");
        for (String code : codeCells) {
            StringBuilder lines = new StringBuilder();
            for (String line : code.split("(?<=\n)")) {
                lines.append(lines.isEmpty() ? "" : ", ").append('"')
                        .append(line.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")).append('"');
            }
            cells.append(", {\"cell_type\": \"code\", \"execution_count\": null, \"metadata\": {}, \"outputs\": [], \"source\": [")
                    .append(lines).append("]}");
        }
        Path file = dir.resolve("test.ipynb");
        Files.writeString(file, "{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": [" + cells + "]}");
        return file;
    }

    private static NotebookRunner.Result run(Path dir, Path notebook, ByteArrayOutputStream console) throws IOException {
        return new NotebookRunner(dir.resolve("out"), new PrintStream(console, true, StandardCharsets.UTF_8)).run(notebook, "");
    }

    @Test
    void runsCellsInOneShellAndSavesAFinalImageAsPng(@TempDir Path dir) throws IOException {
        Path notebook = notebook(dir,
                "import java.awt.image.BufferedImage;\nint width = 7;\nList<Integer> seen = new ArrayList<>();   // java.util by default\n",
                "seen.add(width);\nSystem.out.println(\"seen \" + seen);\nvar image = new BufferedImage(width, 3, BufferedImage.TYPE_INT_RGB);\nimage.setRGB(1, 2, 0xff0000);\nimage",
                "String.format(\"%d px\", width * 3)",
                "int notShown = 5;");
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        NotebookRunner.Result result = run(dir, notebook, console);
        assertNull(result.failure());
        assertEquals(4, result.cells());
        Path png = dir.resolve("out").resolve("cell-02.png").toAbsolutePath();
        assertEquals(List.of(png), result.images(), "numbered by the cell's place in the notebook, markdown included");
        BufferedImage saved = ImageIO.read(png.toFile());
        assertEquals(7, saved.getWidth());
        assertEquals(3, saved.getHeight());
        assertEquals(0xff0000, saved.getRGB(1, 2) & 0xffffff);
        String text = Files.readString(dir.resolve("out").resolve("output.txt"));
        assertTrue(text.contains("---- cell 2 ----\nseen [7]\n"), text);
        assertTrue(text.contains("\"21 px\"\n"), "a final expression's value is shown, as the kernel does: " + text);
        assertFalse(text.contains("\n5\n"), "a declaration's value is not: " + text);
        assertTrue(console.toString(StandardCharsets.UTF_8).contains("[image: " + png + "]"));

        // the notebook written back with its outputs, as Jupyter saves an executed notebook
        JsonArray cells = JsonParser.parseString(Files.readString(dir.resolve("out").resolve("test.ipynb")))
                .getAsJsonObject().getAsJsonArray("cells");
        assertEquals(5, cells.size());
        assertFalse(cells.get(0).getAsJsonObject().has("outputs"), "the markdown cell is left as it was");
        JsonArray second = cells.get(2).getAsJsonObject().getAsJsonArray("outputs");
        assertEquals(2, second.size(), second.toString());
        assertEquals("stream", second.get(0).getAsJsonObject().get("output_type").getAsString());
        assertEquals("seen [7]\n", second.get(0).getAsJsonObject().get("text").getAsString());
        byte[] png64 = Base64.getDecoder().decode(second.get(1).getAsJsonObject().getAsJsonObject("data")
                .get("image/png").getAsString());
        assertEquals(7, ImageIO.read(new java.io.ByteArrayInputStream(png64)).getWidth());
        assertEquals(2, cells.get(2).getAsJsonObject().get("execution_count").getAsInt());
        assertEquals("\"21 px\"\n", cells.get(3).getAsJsonObject().getAsJsonArray("outputs").get(0).getAsJsonObject()
                .get("text").getAsString());
        assertEquals(0, cells.get(4).getAsJsonObject().getAsJsonArray("outputs").size(), "a declaration shows nothing");
    }

    @Test
    void displayShowsAnImageAsAPictureAndAnythingElseAsText(@TempDir Path dir) throws IOException {
        Path notebook = notebook(dir,
                "var image = new java.awt.image.BufferedImage(4, 2, java.awt.image.BufferedImage.TYPE_INT_RGB);\n"
                        + "display(\"a table's text\");\ndisplay(image);\nint after = 1;");
        NotebookRunner.Result result = run(dir, notebook, new ByteArrayOutputStream());
        assertNull(result.failure());
        Path png = dir.resolve("out").resolve("cell-01-1.png").toAbsolutePath();
        assertEquals(List.of(png), result.images(), "a displayed image is one of the cell's pictures");
        assertEquals(4, ImageIO.read(png.toFile()).getWidth());
        assertTrue(Files.readString(dir.resolve("out").resolve("output.txt")).contains("a table's text\n"));
    }

    @Test
    void stopsAtTheFirstCellThatThrowsAndSaysWhy(@TempDir Path dir) throws IOException {
        Path notebook = notebook(dir,
                "int n = 2;",
                "if (n < 3) throw new IllegalStateException(\"This run contradicts the notebook's lesson: n = \" + n);",
                "System.out.println(\"never\");");
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        NotebookRunner.Result result = run(dir, notebook, console);
        assertEquals("cell 2: java.lang.IllegalStateException: This run contradicts the notebook's lesson: n = 2",
                result.failure());
        assertEquals(2, result.cells());
        assertFalse(console.toString(StandardCharsets.UTF_8).contains("never"));
        JsonArray cells = JsonParser.parseString(Files.readString(dir.resolve("out").resolve("test.ipynb")))
                .getAsJsonObject().getAsJsonArray("cells");
        JsonObject error = cells.get(2).getAsJsonObject().getAsJsonArray("outputs").get(0).getAsJsonObject();
        assertEquals("error", error.get("output_type").getAsString());
        assertEquals("java.lang.IllegalStateException", error.get("ename").getAsString());
        assertEquals("This run contradicts the notebook's lesson: n = 2", error.get("evalue").getAsString());
        assertEquals(0, cells.get(3).getAsJsonObject().getAsJsonArray("outputs").size(), "the cells after it did not run");
        assertTrue(cells.get(3).getAsJsonObject().get("execution_count").isJsonNull(), "and have no execution count");
    }

    @Test
    void aCellThatDoesNotCompileFails(@TempDir Path dir) throws IOException {
        NotebookRunner.Result result = run(dir, notebook(dir, "int n = \"text\";"), new ByteArrayOutputStream());
        assertTrue(result.failure().startsWith("cell 1: does not compile: int n = \"text\";"), result.failure());
        assertTrue(result.failure().contains("incompatible types"), result.failure());
    }

    @Test
    void classPathEntriesWithAStarAreTheFoldersJars(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("b.jar"), "");
        Files.writeString(dir.resolve("a.jar"), "");
        Files.writeString(dir.resolve("notes.txt"), "");
        assertEquals(List.of(dir + "/a.jar", dir + "/b.jar", "/x/classes"),
                NotebookRunner.expand(dir + "/*.jar::/x/classes"));
        assertEquals(List.of(dir + "/a.jar", dir + "/b.jar"), NotebookRunner.expand(dir + "/*"));
    }
}
