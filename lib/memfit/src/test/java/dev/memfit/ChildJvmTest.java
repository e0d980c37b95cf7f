package dev.memfit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The child-JVM harness: the child sees the test classes and settings, a kill is SIGKILL, failures quote the log. */
class ChildJvmTest {

    @TempDir
    Path dir;

    /** A child that reports what it sees, registers a shutdown hook that leaves a file, then waits to be killed. */
    public static final class Waiter {
        private Waiter() {
        }

        /**
         * Runs the child.
         *
         * @param args the file the shutdown hook would write, and whether to fail at once ("fail")
         * @throws Exception never on purpose
         */
        public static void main(String[] args) throws Exception {
            if (args.length > 1 && args[1].equals("fail")) {
                System.out.println("about to fail");
                throw new IllegalStateException("failing on purpose");
            }
            Path hookFile = Path.of(args[0]);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    Files.writeString(hookFile, "the shutdown hook ran");
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }));
            System.out.println("DJL_OFFLINE=" + System.getenv("DJL_OFFLINE") + " EXTRA=" + System.getenv("EXTRA")
                    + " python=" + System.getProperty("memfit.python") + " option=" + System.getProperty("child.option"));
            System.out.println("ready");
            System.out.flush();
            Thread.sleep(600_000);
        }
    }

    @Test
    void aKilledChildDiesOfSigkillWithoutRunningItsShutdownHooks() throws Exception {
        Path log = dir.resolve("child.log");
        Path hook = dir.resolve("hook-ran");
        try (ChildJvm child = ChildJvm.start(log, Map.of("EXTRA", "x"), List.of("-Dchild.option=y"), Waiter.class,
                hook.toString())) {
            child.waitUntil(Duration.ofSeconds(60), "ready", ChildJvm.lineContaining(log, "ready"));
            child.kill();
            assertEquals(ChildJvm.SIGKILL_EXIT, child.process().exitValue());
        }
        assertFalse(Files.exists(hook), "SIGKILL runs no shutdown hook (SIGTERM would)");
        String seen = Files.readString(log);
        assertTrue(seen.contains("DJL_OFFLINE=true EXTRA=x"), seen);
        assertTrue(seen.contains("option=y"), seen);
        assertTrue(seen.contains("python=" + System.getProperty("memfit.python")), seen);
    }

    @Test
    void aFailingChildIsReportedWithItsLog() {
        Path log = dir.resolve("failing.log");
        try (ChildJvm child = ChildJvm.start(log, Waiter.class, dir.resolve("unused").toString(), "fail")) {
            AssertionError e = assertThrows(AssertionError.class, () -> child.awaitSuccess(Duration.ofSeconds(60)));
            assertTrue(e.getMessage().contains("exit status 1") && e.getMessage().contains("about to fail")
                    && e.getMessage().contains("failing on purpose"), e.getMessage());
            AssertionError notKillable = assertThrows(AssertionError.class, child::kill);
            assertTrue(notKillable.getMessage().contains("before it could be killed"), notKillable.getMessage());
        }
        try (ChildJvm child = ChildJvm.start(dir.resolve("waiting.log"), Waiter.class, dir.resolve("unused").toString(), "fail")) {
            AssertionError e = assertThrows(AssertionError.class, () -> child.waitUntil(Duration.ofSeconds(60), "the line 'never'",
                    ChildJvm.lineContaining(dir.resolve("waiting.log"), "never")));
            assertTrue(e.getMessage().contains("exited with 1 before the line 'never'") && e.getMessage().contains("failing on purpose"),
                    e.getMessage());
        }
    }
}
