package dev.memfit.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Notebook 00 as a user meets it: the Jupyter server {@code ./memfit lab} starts, the notebook opened in a real
 * (headless) browser, every cell run from the notebook's own "Cell > Run All" menu, the kernel talking to the page
 * through the server's websocket. The test waits for the loss plot to appear in the page, checks that no cell
 * failed and every cell ran, and saves a screenshot to {@code build/browser/}.
 *
 * <p>It needs Debian's {@code chromium} and {@code chromium-driver} and the kernelspec {@code ./memfit setup}
 * writes, so it runs where {@code ./memfit test} asks for it ({@code MEMFIT_BROWSER_TEST=1}; the launcher installs
 * the packages first). Selenium is pointed at {@code /usr/bin/chromedriver} and {@code /usr/bin/chromium}, so its
 * manager never downloads anything. The notebook runs on a copy, so the server's autosave never writes outputs into
 * {@code notebooks/}.
 */
@EnabledIfEnvironmentVariable(named = "MEMFIT_BROWSER_TEST", matches = "1")
class NotebookInBrowserTest {

    private static final Path ROOT = Path.of("..", "..").toAbsolutePath().normalize();
    private static final String NOTEBOOK = "00-quickstart.ipynb";

    @Test
    @Timeout(900)
    void quickstartRunsThroughTheNotebookUiAndShowsItsPlot() throws Exception {
        Path out = ROOT.resolve("build").resolve("browser");
        Path copy = out.resolve("root");
        deleteRecursively(copy);
        Files.createDirectories(copy.resolve("notebooks"));
        Files.copy(ROOT.resolve("notebooks").resolve(NOTEBOOK), copy.resolve("notebooks").resolve(NOTEBOOK));
        // the notebook reads ../data-samples and writes ../build/work, relative to its own folder
        Files.createSymbolicLink(copy.resolve("data-samples"), ROOT.resolve("data-samples"));

        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        String token = UUID.randomUUID().toString();
        ProcessBuilder server = new ProcessBuilder(ROOT.resolve("memfit").toString(), "lab", "--no-browser",
                "--ip=127.0.0.1", "--port=" + port, "--NotebookApp.token=" + token,
                "--notebook-dir=" + copy.resolve("notebooks"))
                .redirectErrorStream(true)
                .redirectOutput(out.resolve("server.log").toFile());
        server.environment().put("MEMFIT_SIZE", "small");
        server.environment().put("MEMFIT_LAB_UI", "notebook");    // the classic UI this test drives, even where JupyterLab is installed
        server.environment().putIfAbsent("MEMFIT_KERNEL_HEAP", "512m");
        Process process = server.start();
        WebDriver driver = null;
        try {
            String base = "http://127.0.0.1:" + port;
            awaitServer(base + "/api/status?token=" + token, process, out.resolve("server.log"));
            driver = chromium();
            driver.get(base + "/notebooks/" + NOTEBOOK + "?token=" + token);
            WebDriverWait wait = new WebDriverWait(driver, Duration.ofSeconds(180));
            wait.until(d -> !d.findElements(By.cssSelector("#kernel_indicator_icon.kernel_idle_icon")).isEmpty());

            driver.findElement(By.linkText("Cell")).click();
            driver.findElement(By.cssSelector("#run_all_cells > a")).click();

            WebDriverWait cells = new WebDriverWait(driver, Duration.ofSeconds(600));
            cells.pollingEvery(Duration.ofSeconds(1));
            cells.until(d -> !d.findElements(By.cssSelector(".output_area img")).isEmpty() && allCellsRan(d));

            // the screenshot first, so a failed check below can be looked at
            Files.write(out.resolve("00-quickstart.png"), ((ChromeDriver) driver).getScreenshotAs(OutputType.BYTES));
            List<WebElement> errors = driver.findElements(By.cssSelector(".output_error"));
            assertTrue(errors.isEmpty(), () -> "a cell failed in the browser: " + errors.getFirst().getText());
            WebElement plot = driver.findElement(By.cssSelector(".output_area img"));
            long width = ((Number) ((JavascriptExecutor) driver).executeScript("return arguments[0].naturalWidth;", plot)).longValue();
            assertTrue(width > 100, "the plot image is decoded and drawn (" + width + " px wide)");
            List<WebElement> prompts = driver.findElements(By.cssSelector(".code_cell .input_prompt"));
            long ran = prompts.stream().filter(p -> p.getText().matches("In\\s*\\[\\d+\\]:")).count();
            assertEquals(prompts.size(), ran, "every code cell shows an execution count");
            String page = driver.findElement(By.id("notebook")).getText();
            assertTrue(page.contains("lesson holds: training lowers the loss"),
                    "the notebook's lesson check ran and held: " + page.substring(Math.max(0, page.length() - 1500)));
        } finally {
            if (driver != null) {
                driver.quit();
            }
            process.descendants().forEach(ProcessHandle::destroy);
            process.destroy();
            if (!process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
            }
        }
    }

    /** Whether every code cell shows an execution count (none "In [*]" running or "In [ ]" not yet run). */
    private static boolean allCellsRan(WebDriver driver) {
        List<WebElement> prompts = driver.findElements(By.cssSelector(".code_cell .input_prompt"));
        return !prompts.isEmpty() && prompts.stream().allMatch(p -> p.getText().matches("In\\s*\\[\\d+\\]:"))
                && !driver.findElements(By.cssSelector("#kernel_indicator_icon.kernel_idle_icon")).isEmpty();
    }

    private static WebDriver chromium() {
        ChromeOptions options = new ChromeOptions();
        options.setBinary("/usr/bin/chromium");
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,2400");
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(new File("/usr/bin/chromedriver")).build();
        return new ChromeDriver(service, options);
    }

    private static void awaitServer(String status, Process process, Path log) throws Exception {
        HttpClient client = HttpClient.newHttpClient();
        long deadline = System.nanoTime() + Duration.ofSeconds(180).toNanos();
        while (System.nanoTime() < deadline) {
            assertTrue(process.isAlive(), () -> "the Jupyter server exited: " + tail(log));
            try {
                HttpResponse<String> response = client.send(HttpRequest.newBuilder(URI.create(status))
                        .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 200) {
                    return;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(500);
        }
        throw new AssertionError("the Jupyter server did not answer within 180 s: " + tail(log));
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private static void deleteRecursively(Path path) throws IOException {
        if (!Files.exists(path, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (var paths = Files.walk(path)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
