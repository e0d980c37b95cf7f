package dev.memfit.plot;

import dev.memfit.memory.MemorySample;
import dev.memfit.memory.MemoryTimeline;
import org.junit.jupiter.api.Test;

import java.awt.image.BufferedImage;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Headless rendering: each chart is an image with more than a blank background. */
class ChartsTest {

    private static int distinctColours(BufferedImage image) {
        java.util.Set<Integer> colours = new java.util.HashSet<>();
        for (int y = 0; y < image.getHeight(); y += 2) {
            for (int x = 0; x < image.getWidth(); x += 2) {
                colours.add(image.getRGB(x, y));
            }
        }
        return colours.size();
    }

    @Test
    void rendersEachKindHeadless() {
        Map<String, double[]> curves = new LinkedHashMap<>();
        curves.put("in memory", new double[]{5, 4, 3.5, 3.2});
        curves.put("mapped", new double[]{5, 4, 3.5, 3.2});
        BufferedImage loss = Charts.lossCurves("loss", curves);
        assertEquals(760, loss.getWidth());
        assertTrue(distinctColours(loss) > 10);

        MemorySample a = new MemorySample(0, 10 << 20, 1 << 30, 0, 0, 0, 100 << 20, 80 << 20, 20 << 20, -1);
        MemorySample b = new MemorySample(1, 30 << 20, 1 << 30, 0, 0, 0, 200 << 20, 90 << 20, 110 << 20, -1);
        BufferedImage memory = Charts.memoryTimeline("memory", new MemoryTimeline("run", List.of(a, b), List.of()));
        assertTrue(distinctColours(memory) > 10);

        Map<String, double[]> series = new LinkedHashMap<>();
        series.put("peak heap", new double[]{1, 2});
        BufferedImage bars = Charts.bars("peaks", "MB", List.of("x", "y"), series);
        assertTrue(distinctColours(bars) > 5);
        BufferedImage lines = Charts.lines("speed", "threads", "GB/s", new double[]{1, 2}, series);
        assertTrue(distinctColours(lines) > 5);
        Map<String, double[][]> groups = new LinkedHashMap<>();
        groups.put("a", new double[][]{{0, 0}, {1, 1}});
        groups.put("b", new double[][]{{0, 1}, {1, 0}});
        assertTrue(distinctColours(Charts.scatter("latent", "PC1", "PC2", groups)) > 5);
    }
}
