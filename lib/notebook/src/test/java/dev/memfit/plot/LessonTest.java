package dev.memfit.plot;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LessonTest {

    @Test
    void aClaimThatHoldsIsPrintedWithItsMeasurement() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Lesson.expect("shards are smaller", true, "3 MB vs 5 MB", new PrintStream(bytes, true, StandardCharsets.UTF_8));
        assertEquals("lesson holds: shards are smaller (measured: 3 MB vs 5 MB)" + System.lineSeparator(),
                bytes.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aClaimThatDoesNotHoldFailsTheRunNamingClaimAndMeasurement() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Lesson.Failed failed = assertThrows(Lesson.Failed.class, () -> Lesson.expect("shards are smaller", false,
                "7 MB vs 5 MB", new PrintStream(bytes, true, StandardCharsets.UTF_8)));
        assertTrue(failed.getMessage().contains("\"shards are smaller\": measured 7 MB vs 5 MB"), failed.getMessage());
        assertTrue(bytes.toString(StandardCharsets.UTF_8).startsWith("FAILED lesson: shards are smaller"));
    }

    @Test
    void aClaimNeedsWords() {
        assertThrows(IllegalArgumentException.class, () -> Lesson.expect(" ", true, "1"));
    }
}
