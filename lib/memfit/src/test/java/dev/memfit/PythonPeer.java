package dev.memfit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs the reference tools (Debian's numpy, h5py...) through {@code /usr/bin/python3} for side-by-side checks.
 */
public final class PythonPeer {

    private PythonPeer() {
    }

    /**
     * Runs a Python script and returns its standard output, failing the test with the script's error otherwise.
     *
     * @param script the code; {@code sys.argv[1:]} are the arguments
     * @param args arguments
     * @return stdout, trimmed
     */
    public static String run(String script, Object... args) {
        String python = System.getProperty("memfit.python", "/usr/bin/python3");
        if (!Files.isExecutable(Path.of(python))) {
            throw new AssertionError(python + " not found: the format checks need Debian's python3 with numpy "
                    + "(run ./memfit test, which installs python3-numpy, or apt-get install python3-numpy)");
        }
        List<String> command = new ArrayList<>(List.of(python, "-c", script));
        for (Object arg : args) {
            command.add(String.valueOf(arg));
        }
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(false).start();
            byte[] out = process.getInputStream().readAllBytes();
            byte[] err = process.getErrorStream().readAllBytes();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("python timed out");
            }
            if (process.exitValue() != 0) {
                throw new AssertionError("python failed (" + process.exitValue() + "):\n" + new String(err, StandardCharsets.UTF_8)
                        + "\nscript:\n" + script);
            }
            return new String(out, StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            throw new AssertionError("cannot run " + python, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
