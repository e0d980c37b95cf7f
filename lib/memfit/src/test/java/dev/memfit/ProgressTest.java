package dev.memfit;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProgressTest {

    @Test
    void rateIsTakenOverTheElapsedTimeToTheNanosecond() {
        Progress.Renderer renderer = new Progress.Renderer(" rows");
        assertEquals("1,000.0 rows/s", renderer.rate(2_900, Duration.ofMillis(2_900)),
                "2.9 s of work is rated over 2.9 s, not over 2 whole seconds");
        assertEquals("4,000.0 rows/s", renderer.rate(1_000, Duration.ofMillis(250)), "work done in under a second");
        assertEquals("? rows/s", renderer.rate(5, Duration.ofNanos(999_999)));
    }

    @Test
    void aShortTaskEndsWithItsRateInsteadOfAQuestionMark() throws InterruptedException {
        PrintStream original = System.out;
        String setting = System.getProperty("memfit.progress");
        System.setProperty("memfit.progress", "true"); // the build turns bars off for every other test
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            try (Progress bar = Progress.bar("Reading", 1_000, "rows")) {
                Thread.sleep(5);
                bar.step(1_000);
            }
        } finally {
            System.setOut(original);
            if (setting == null) {
                System.clearProperty("memfit.progress");
            } else {
                System.setProperty("memfit.progress", setting);
            }
        }
        String lines = captured.toString(StandardCharsets.UTF_8);
        String last = lines.strip().substring(lines.strip().lastIndexOf('\r') + 1);
        assertTrue(last.contains("1000/1000 rows"), last);
        assertTrue(last.matches("(?s).*\\) [0-9,]+\\.[0-9] rows/s.*"), "the final line shows a rate: " + last);
        assertFalse(last.contains("?"), last);
    }
}
