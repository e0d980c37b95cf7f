package dev.memfit.plot;

import dev.memfit.memory.MemorySample;
import dev.memfit.memory.MemoryTimeline;
import org.junit.jupiter.api.Test;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategorySeries;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.internal.chartpart.AxesChart;
import org.knowm.xchart.internal.chartpart.ChartPart;
import org.knowm.xchart.internal.series.Series;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.Color;
import java.awt.Rectangle;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Headless rendering and the chart models behind each factory: axis titles, series order, legends outside the plot,
 * tick patterns with a leading zero, memory marks, measured/expected pairs, highlighted points, category labels, and
 * the pixels of the image grid. Set {@code -Dmemfit.charts.dump=DIR} (through JDK_JAVA_OPTIONS) to write the PNGs.
 */
class ChartsTest {

    private static final double MB = 1024.0 * 1024.0;

    private static int distinctColours(BufferedImage image) {
        Set<Integer> colours = new HashSet<>();
        for (int y = 0; y < image.getHeight(); y += 2) {
            for (int x = 0; x < image.getWidth(); x += 2) {
                colours.add(image.getRGB(x, y));
            }
        }
        return colours.size();
    }

    /** Renders, checks the image has the chart's size and more than a blank background, and optionally saves it. */
    private static BufferedImage render(org.knowm.xchart.internal.chartpart.Chart<?, ?> chart, String name) throws Exception {
        BufferedImage image = Charts.image(chart);
        assertEquals(chart.getWidth(), image.getWidth());
        assertEquals(chart.getHeight(), image.getHeight());
        assertTrue(distinctColours(image) > 10, name + " looks blank");
        dump(image, name);
        return image;
    }

    private static void dump(BufferedImage image, String name) throws Exception {
        String dir = System.getProperty("memfit.charts.dump");
        if (dir != null) {
            Files.createDirectories(Path.of(dir));
            javax.imageio.ImageIO.write(image, "png", Path.of(dir, name + ".png").toFile());
        }
    }

    private static List<String> names(AxesChart<?, ?> chart) {
        return chart.getSeriesCollection().stream().map(Series::getName).toList();
    }

    private static void assertLeadingZero(String pattern) {
        assertEquals("0.5", new DecimalFormat(pattern).format(0.5), pattern);
    }

    private static List<ChartPart> annotations(AxesChart<?, ?> chart) throws Exception {
        // XChart keeps annotations in a protected list with no getter.
        var field = AxesChart.class.getDeclaredField("annotations");
        field.setAccessible(true);
        @SuppressWarnings("unchecked")
        List<ChartPart> parts = (List<ChartPart>) field.get(chart);
        return parts;
    }

    @Test
    void stepLossesBreakWhereARunTookNoStepAndDrawLaterRunsDashedThenDotted() throws Exception {
        Map<String, double[]> curves = new LinkedHashMap<>();
        double nan = Double.NaN;
        curves.put("uninterrupted", new double[]{0.9, 0.8, 0.7, 0.6, 0.5, 0.45});
        curves.put("crashed", new double[]{0.9, 0.8, 0.7, 0.6, nan, nan});
        curves.put("resumed", new double[]{nan, nan, 0.7, 0.6, 0.5, 0.45});
        XYChart chart = Charts.stepLossesChart("resume", "loss per document", curves);
        assertEquals("optimizer step", chart.getXAxisTitle());
        assertEquals("loss per document", chart.getYAxisTitle());
        assertEquals(List.of("uninterrupted", "crashed", "resumed"), names(chart));
        XYSeries first = chart.getSeries("uninterrupted");
        XYSeries second = chart.getSeries("crashed");
        XYSeries third = chart.getSeries("resumed");
        assertNull(first.getLineStyle().getDashArray(), "the first run is solid");
        assertNotNull(second.getLineStyle().getDashArray());
        assertNotNull(third.getLineStyle().getDashArray());
        assertFalse(Arrays.equals(second.getLineStyle().getDashArray(), third.getLineStyle().getDashArray()),
                "the third run is dotted, not dashed like the second, so all three show where they coincide");
        assertArrayEquals(new double[]{1, 2, 3, 4, 5, 6}, third.getXData(), "steps counted from 1");
        assertTrue(Double.isNaN(third.getYData()[0]), "a step the run did not take stays a gap, not a zero");
        render(chart, "step-losses");
    }

    @Test
    void lossCurvesLabelTheAxisAsAskedKeepOrderAndPutTheLegendOutside() throws Exception {
        Map<String, double[]> curves = new LinkedHashMap<>();
        curves.put("mapped", new double[]{0.9, 0.7, 0.55, 0.5});
        curves.put("in memory", new double[]{0.9, 0.7, 0.55, 0.5});
        XYChart chart = Charts.lossCurvesChart("VAE", "ELBO loss", curves);
        assertEquals("ELBO loss", chart.getYAxisTitle());
        assertEquals("epoch", chart.getXAxisTitle());
        assertEquals(List.of("mapped", "in memory"), names(chart));   // insertion order, not alphabetical
        assertEquals(Styler.LegendPosition.OutsideE, chart.getStyler().getLegendPosition());
        assertLeadingZero(chart.getStyler().getYAxisDecimalPattern());
        XYSeries second = (XYSeries) chart.getSeriesCollection().toArray()[1];
        assertNotNull(second.getLineStyle().getDashArray(), "the second run is dashed so it shows over the first");
        BufferedImage image = render(chart, "loss");
        assertTrue(image.getWidth() > 700);

        // The two-argument form keeps compiling and says just "loss".
        BufferedImage old = Charts.lossCurves("topics", curves);
        assertEquals(image.getWidth(), old.getWidth());
        assertNotEquals("loss per document", Charts.lossCurvesChart("t", "loss", curves).getYAxisTitle());
    }

    @Test
    void unorderedMapsAreSortedByNameLinkedMapsKeepTheirOrder() {
        Map<String, double[]> unordered = Map.of("c", new double[]{1}, "a", new double[]{2}, "b", new double[]{3});
        assertEquals(List.of("a", "b", "c"), names(Charts.lossCurvesChart("t", "loss", unordered)));
        assertEquals(List.of("a", "b", "c"), Charts.ordered(new java.util.HashMap<>(unordered)).stream()
                .map(Map.Entry::getKey).toList());
        Map<String, double[]> linked = new LinkedHashMap<>();
        linked.put("c", new double[]{1});
        linked.put("a", new double[]{2});
        assertEquals(List.of("c", "a"), names(Charts.linesChart("t", "x", "y", new double[]{1}, linked,
                Charts.XScale.LINEAR)));
    }

    @Test
    void tickPatternsKeepTheLeadingZeroAndEnoughDecimals() {
        Charts.Range unit = new Charts.Range();
        unit.add(new double[]{0, 1});
        assertLeadingZero(Charts.pattern(unit, false));
        assertEquals("0.25", new DecimalFormat(Charts.pattern(unit, false)).format(0.25));
        Charts.Range tiny = new Charts.Range();
        tiny.add(new double[]{0.001, 0.002});
        assertEquals("0.0015", new DecimalFormat(Charts.pattern(tiny, false)).format(0.0015));
        Charts.Range big = new Charts.Range();
        big.add(new double[]{0, 20_000});
        assertEquals("12,500", new DecimalFormat(Charts.pattern(big, false)).format(12_500));
        Charts.Range decades = new Charts.Range();
        decades.add(new double[]{0.01, 1000});
        assertEquals("0.01", new DecimalFormat(Charts.pattern(decades, true)).format(0.01));
    }

    @Test
    void memoryGrowthStartsEverySeriesAtZeroAndDrawsTheDataSize() {
        long mib = 1 << 20;
        List<MemorySample> samples = new ArrayList<>();
        for (int i = 0; i <= 10; i++) {
            // heap starts at 300 MiB and falls 1 MiB a step; native grows 10 MiB a step from 2 MiB
            samples.add(new MemorySample(i, (300 - i) * mib, 1024 * mib, 0, (2 + 10L * i) * mib, 0, 500 * mib,
                    (400 + 10L * i) * mib, 100 * mib, -1, 0));
        }
        XYChart chart = Charts.memoryGrowthChart("growth", 100 * mib, new MemoryTimeline("run", samples, List.of()));
        assertEquals("MiB more than at the start", chart.getYAxisTitle());
        assertEquals(List.of("heap used", "native (memfit)", "RSS anonymous", "RSS file pages", "data size (100.0 MiB)"), names(chart));
        assertArrayEquals(new double[]{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, chart.getSeries("native (memfit)").getYData(), 1e-9);
        assertEquals(-10, chart.getSeries("heap used").getYData()[10], 1e-9, "a shrinking heap shows as negative growth");
        assertArrayEquals(new double[]{100, 100}, chart.getSeries("data size (100.0 MiB)").getYData(), 1e-9);
        assertArrayEquals(new double[]{0, 10}, chart.getSeries("data size (100.0 MiB)").getXData(), 1e-9, "across the run");
        assertNull(chart.getStyler().getYAxisMin(), "negative growth stays visible");
        assertTrue(Charts.memoryGrowth("growth", 0, new MemoryTimeline("run", samples, List.of())).getWidth() > 700);
    }

    @Test
    void memoryTimelineDrawsNativeMemoryAndTheMarks() throws Exception {
        List<MemorySample> samples = new ArrayList<>();
        for (int i = 0; i <= 20; i++) {
            long mb = 1 << 20;
            samples.add(new MemorySample(i * 0.5, (10 + i) * mb, 1024 * mb, 0, (5L + 2L * i) * mb, 0, (100 + 3L * i) * mb,
                    (80 + 2L * i) * mb, 20 * mb, -1, 0));
        }
        var marks = List.of(new MemoryTimeline.Mark(2.5, "epoch 1"), new MemoryTimeline.Mark(7.0, "epoch 2"));
        XYChart chart = Charts.memoryTimelineChart("memory", new MemoryTimeline("run", samples, marks));
        assertEquals("MiB", chart.getYAxisTitle(), "memory in binary units, as everywhere");
        assertEquals(List.of("heap used", "native (memfit)", "RSS anonymous", "RSS file pages"), names(chart),
                "device is -1 (not measured) and left out");
        XYSeries nativeLine = chart.getSeries("native (memfit)");
        assertNotNull(nativeLine);
        assertEquals(45.0, Arrays.stream(nativeLine.getYData()).max().orElseThrow(), 1e-9);   // 5 + 2 * 20 MB
        assertEquals(Styler.LegendPosition.OutsideE, chart.getStyler().getLegendPosition());

        List<ChartPart> parts = annotations(chart);
        List<Double> lines = parts.stream().filter(p -> p instanceof Charts.MarkLine)
                .map(p -> ((Charts.MarkLine) p).seconds).toList();
        List<String> labels = parts.stream().filter(p -> p instanceof Charts.MarkText)
                .map(p -> ((Charts.MarkText) p).label).toList();
        assertEquals(List.of(2.5, 7.0), lines);
        assertEquals(List.of("epoch 1", "epoch 2"), labels);
        // The y axis leaves room above the highest line (RSS anonymous, 120 MB) for the labels.
        assertTrue(chart.getStyler().getYAxisMax() > 120);
        render(chart, "memory");

        // Several timelines: one set of series and marks per run, named after it.
        XYChart two = Charts.memoryTimelineChart("memory", new MemoryTimeline("eager", samples, marks),
                new MemoryTimeline("lazy", samples, List.of()));
        assertTrue(names(two).containsAll(List.of("eager: native (memfit)", "lazy: native (memfit)")));
        assertEquals(List.of("eager: epoch 1", "eager: epoch 2"), annotations(two).stream()
                .filter(p -> p instanceof Charts.MarkText).map(p -> ((Charts.MarkText) p).label).toList());

        // Twelve marks within a second of a ten-second run: every line drawn, labels only where they do not collide
        List<MemoryTimeline.Mark> crowded = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            crowded.add(new MemoryTimeline.Mark(3 + i * 0.08, "streaming the .h5ad: epoch " + (i + 1)));
        }
        XYChart busy = Charts.memoryTimelineChart("memory", new MemoryTimeline("run", samples, crowded));
        List<ChartPart> busyParts = annotations(busy);
        assertEquals(12, busyParts.stream().filter(p -> p instanceof Charts.MarkLine).count(), "every mark keeps its line");
        List<Charts.MarkText> texts = busyParts.stream().filter(p -> p instanceof Charts.MarkText).map(p -> (Charts.MarkText) p).toList();
        assertTrue(texts.size() >= 2 && texts.size() < 12, texts.size() + " labels");
        assertEquals("streaming the .h5ad: epoch 1", texts.getFirst().label, "the first mark is always labelled");

        // a mark at the very end: its label is moved left so it stays on the axis
        XYChart late = Charts.memoryTimelineChart("memory", new MemoryTimeline("run", samples,
                List.of(new MemoryTimeline.Mark(10.0, "a long label at the very end of the run"))));
        Charts.MarkText end = annotations(late).stream().filter(p -> p instanceof Charts.MarkText).map(p -> (Charts.MarkText) p)
                .findFirst().orElseThrow();
        assertTrue(end.x() < 10.0, "centred left of the end, at " + end.x());
        // every sample at one instant: lines for all, one label per row, none printed on top of another
        List<MemorySample> instant = List.of(samples.getFirst());
        XYChart still = Charts.memoryTimelineChart("memory", new MemoryTimeline("run", instant, crowded));
        assertTrue(annotations(still).stream().filter(p -> p instanceof Charts.MarkText).count() <= 2);
    }

    @Test
    void memoryTimelineWithoutMarksHasNoAnnotations() throws Exception {
        MemorySample a = new MemorySample(0, 10 << 20, 1 << 30, 0, 0, 0, 100 << 20, 80 << 20, 20 << 20, -1, 0);
        MemorySample b = new MemorySample(1, 30 << 20, 1 << 30, 0, 0, 0, 200 << 20, 90 << 20, 110 << 20, -1, 0);
        XYChart chart = Charts.memoryTimelineChart("memory", new MemoryTimeline("run", List.of(a, b), List.of()));
        assertTrue(annotations(chart).isEmpty());
        assertTrue(names(chart).contains("native (memfit)"), "memfit allocating nothing is still a line at 0");
        assertTrue(distinctColours(Charts.memoryTimeline("memory", new MemoryTimeline("run", List.of(a, b), List.of()))) > 10);
    }

    @Test
    void measuredAndExpectedPairsShareAColourAndTheExpectedIsDashed() throws Exception {
        double[] epochs = {1, 2, 3, 4};
        Map<String, double[]> mix = new LinkedHashMap<>();
        mix.put("T cell (measured)", new double[]{0.5, 0.4, 0.3, 0.25});
        mix.put("T cell (expected)", new double[]{0.5, 0.38, 0.3, 0.25});
        mix.put("B cell (measured)", new double[]{0.1, 0.2, 0.3, 0.35});
        mix.put("B cell (expected)", new double[]{0.1, 0.21, 0.3, 0.35});
        mix.put("ideal", new double[]{0.25, 0.25, 0.25, 0.25});
        XYChart chart = Charts.linesChart("mix", "epoch", "share", epochs, mix, Charts.XScale.LINEAR);
        assertEquals(new ArrayList<>(mix.keySet()), names(chart));
        for (String name : List.of("T cell", "B cell")) {
            XYSeries measured = chart.getSeries(name + " (measured)");
            XYSeries expected = chart.getSeries(name + " (expected)");
            assertEquals(measured.getLineColor(), expected.getLineColor(), name);
            assertNull(measured.getLineStyle().getDashArray(), name + " measured is solid");
            assertNotNull(expected.getLineStyle().getDashArray(), name + " expected is dashed");
            assertEquals(SeriesMarkers.CIRCLE, measured.getMarker());
        }
        Set<Color> distinct = new HashSet<>(List.of(chart.getSeries("T cell (measured)").getLineColor(),
                chart.getSeries("B cell (measured)").getLineColor(), chart.getSeries("ideal").getLineColor()));
        assertEquals(3, distinct.size(), "each pair and each lone series has its own colour");
        assertEquals(Styler.LegendPosition.OutsideE, chart.getStyler().getLegendPosition());
        assertLeadingZero(chart.getStyler().getYAxisDecimalPattern());
        assertFalse(chart.getStyler().isXAxisLogarithmic());
        render(chart, "lines-pairs");
    }

    @Test
    void linesTakeALogXAxis() throws Exception {
        double[] sizes = {16, 64, 256, 1024, 4096, 16384};
        Map<String, double[]> curves = new LinkedHashMap<>();
        curves.put("estimated (MB)", new double[]{1, 4, 16, 64, 256, 1024});
        curves.put("budget (MB)", new double[]{300, 300, 300, 300, 300, 300});
        XYChart chart = Charts.linesChart("memory", "batch size", "MB", sizes, curves, Charts.XScale.LOG);
        assertTrue(chart.getStyler().isXAxisLogarithmic());
        render(chart, "lines-log");
        // The five-argument form stays linear.
        assertFalse(Charts.linesChart("m", "b", "MB", sizes, curves, Charts.XScale.LINEAR).getStyler().isXAxisLogarithmic());
        assertTrue(Charts.lines("m", "b", "MB", sizes, curves).getWidth() > 700);
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> Charts.linesChart("m", "b",
                "MB", new double[]{0, 1, 2, 3, 4, 5}, curves, Charts.XScale.LOG));
        assertTrue(zero.getMessage().contains("log axis"), zero.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Charts.linesChart("m", "b", "MB", new double[]{1, 2}, curves,
                Charts.XScale.LINEAR));
    }

    @Test
    void scatterDrawsHighlightedPointsOnTopInTheirOwnColour() throws Exception {
        Map<String, double[][]> groups = new LinkedHashMap<>();
        groups.put("other genes", new double[][]{{0, 0}, {1, 1}, {2, 0.5}, {3, 2}});
        groups.put("highly variable", new double[][]{{0.5, 3}, {1.5, 4}});
        Map<String, double[][]> program = Map.of("program genes", new double[][]{{1.5, 4}, {3, 2}});
        XYChart chart = Charts.scatterChart("genes", "mean", "dispersion", groups, program);
        assertEquals(List.of("other genes", "highly variable", "program genes"), names(chart), "highlights last: on top");
        XYSeries highlighted = chart.getSeries("program genes");
        assertEquals(SeriesMarkers.DIAMOND, highlighted.getMarker());
        assertNotEquals(chart.getSeries("other genes").getMarkerColor(), highlighted.getMarkerColor());
        assertNotEquals(chart.getSeries("highly variable").getMarkerColor(), highlighted.getMarkerColor());
        assertNotEquals(chart.getSeries("other genes").getMarkerColor(), chart.getSeries("highly variable").getMarkerColor());
        assertArrayEquals(new double[]{1.5, 3}, highlighted.getXData());
        assertEquals(Styler.LegendPosition.OutsideE, chart.getStyler().getLegendPosition());
        BufferedImage image = render(chart, "scatter-highlight");
        // The highlight colour is really painted.
        int black = Charts.HIGHLIGHTS[0].getRGB();
        boolean found = false;
        for (int y = 0; y < image.getHeight() && !found; y++) {
            for (int x = 0; x < image.getWidth() * 3 / 4 && !found; x++) {   // the plot, not the legend
                found = image.getRGB(x, y) == black;
            }
        }
        assertTrue(found);

        // The four-argument form has no highlighted series.
        assertEquals(2, Charts.scatterChart("g", "x", "y", groups, Map.of()).getSeriesCollection().size());
    }

    @Test
    void barsShowEveryCategoryLabel() throws Exception {
        // Notebook 09's six long labels: XChart dropped one when they were tilted by 20 degrees.
        List<String> categories = List.of("small files (local)", "packed, shuffled (local)", "packed, sequential (local)",
                "small files (network)", "packed, shuffled (network)", "packed, sequential (network)");
        Map<String, double[]> series = new LinkedHashMap<>();
        series.put("first epoch (cold)", new double[]{3.2, 0.8, 0.5, 12.0, 2.5, 1.1});
        series.put("second epoch (warm)", new double[]{0.4, 0.3, 0.2, 0.4, 0.3, 0.2});
        CategoryChart chart = Charts.barsChart("epochs", "seconds", categories, series);
        assertEquals("seconds", chart.getYAxisTitle());
        assertEquals(List.of("first epoch (cold)", "second epoch (warm)"), names(chart));
        for (CategorySeries s : chart.getSeriesCollection()) {
            assertEquals(categories, new ArrayList<>(s.getXData()));
        }
        assertEquals(90, chart.getStyler().getXAxisLabelRotation());
        assertTrue(chart.getHeight() > 440, "taller to hold the upright labels");
        assertEquals(Styler.LegendPosition.OutsideS, chart.getStyler().getLegendPosition());
        assertLeadingZero(chart.getStyler().getYAxisDecimalPattern());
        BufferedImage image = render(chart, "bars-long");
        // Every upright label is a column of dark text below the plot: count the runs of columns with text in the
        // band between the bars' baseline and the legend.
        assertEquals(categories.size(), labelColumns(image));

        CategoryChart shortLabels = Charts.barsChart("peaks", "MB", List.of("x", "y"), Map.of("peak", new double[]{1, 2}));
        assertEquals(0, shortLabels.getStyler().getXAxisLabelRotation());
        assertFalse(shortLabels.getStyler().isLegendVisible(), "one series needs no legend");
        assertThrows(IllegalArgumentException.class, () -> Charts.barsChart("p", "MB", List.of("x", "y"),
                Map.of("peak", new double[]{1})));
    }

    /**
     * Counts groups of adjacent pixel columns holding dark text in a horizontal band just below the plot's lower
     * edge (the last row, scanning up, that is mostly not white: the axis line).
     */
    private static int labelColumns(BufferedImage image) {
        int axisRow = -1;
        for (int y = image.getHeight() - 1; y >= 0 && axisRow < 0; y--) {
            int dark = 0;
            for (int x = 0; x < image.getWidth(); x++) {
                if (image.getRGB(x, y) != Color.WHITE.getRGB()) {
                    dark++;
                }
            }
            if (dark > image.getWidth() / 2) {
                axisRow = y;
            }
        }
        assertTrue(axisRow > 0, "no plot edge found");
        int groups = 0;
        boolean inGroup = false;
        for (int x = 0; x < image.getWidth(); x++) {
            boolean text = false;
            for (int y = axisRow + 20; y < axisRow + 60 && y < image.getHeight(); y++) {
                text |= isDark(image.getRGB(x, y));
            }
            if (text && !inGroup) {
                groups++;
            }
            inGroup = text;
        }
        return groups;
    }

    private static boolean isDark(int rgb) {
        Color c = new Color(rgb);
        return c.getRed() + c.getGreen() + c.getBlue() < 3 * 110;
    }

    @Test
    void imagesScaleEachTileToItsOwnRange() throws Exception {
        int side = 8;
        float[] gradient = new float[side * side];        // dark on the left, bright on the right
        float[] shifted = new float[side * side];         // the same gradient, 100 .. 107: the same picture
        float[] flat = new float[side * side];
        for (int y = 0; y < side; y++) {
            for (int x = 0; x < side; x++) {
                gradient[y * side + x] = x / (float) (side - 1);
                shifted[y * side + x] = 100 + x;
            }
        }
        Arrays.fill(flat, 3f);
        BufferedImage image = Charts.images("particles", new float[][]{gradient, shifted, flat}, side, 2);
        dump(image, "images");
        int scale = Charts.tileScale(side);
        assertEquals(12, scale);   // 8 pixels blown up to 96
        for (int i = 0; i < 2; i++) {
            Rectangle tile = Charts.tileBounds("particles", i, side, 2);
            assertEquals(side * scale, tile.width);
            for (int x = 0; x < side; x++) {
                int expected = Math.round(x / 7f * 255);
                int px = tile.x + x * scale + scale / 2;
                int py = tile.y + 3 * scale + scale / 2;
                assertEquals(expected, new Color(image.getRGB(px, py)).getRed(), "tile " + i + " column " + x);
            }
            assertEquals(0, new Color(image.getRGB(tile.x, tile.y)).getGreen());
            assertEquals(255, new Color(image.getRGB(tile.x + tile.width - 1, tile.y + tile.height - 1)).getBlue());
        }
        // Second row: the flat image is mid-grey, and the grid is two tiles wide and two high.
        Rectangle third = Charts.tileBounds("particles", 2, side, 2);
        assertEquals(Charts.tileBounds("particles", 0, side, 2).x, third.x);
        assertEquals(128, new Color(image.getRGB(third.x + 5, third.y + 5)).getRed());
        assertTrue(image.getHeight() >= third.y + third.height);
        assertTrue(image.getWidth() >= Charts.tileBounds("particles", 1, side, 2).x + side * scale);
        // The title band has dark text pixels above the first tile.
        boolean title = false;
        for (int y = 0; y < Charts.tileBounds("particles", 0, side, 2).y && !title; y++) {
            for (int x = 0; x < image.getWidth() && !title; x++) {
                title = isDark(image.getRGB(x, y));
            }
        }
        assertTrue(title);

        // a title longer than the grid widens the image instead of being cut off: its text reaches past the tiles
        BufferedImage titled = Charts.images("One noisy particle per conformation, side by side", new float[][]{gradient, shifted}, side, 2);
        int gridRight = Charts.tileBounds("t", 1, side, 2).x + Charts.tileBounds("t", 1, side, 2).width;
        assertTrue(titled.getWidth() > gridRight + 100, "width " + titled.getWidth() + " for a grid ending at " + gridRight);
        boolean textBeyondGrid = false;
        for (int x = gridRight + 20; x < titled.getWidth(); x++) {
            for (int y = 0; y < 28; y++) {
                textBeyondGrid |= isDark(titled.getRGB(x, y));
            }
        }
        assertTrue(textBeyondGrid, "the end of the title is drawn");

        IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class,
                () -> Charts.images("", new float[][]{gradient, new float[5]}, side, 2));
        assertTrue(wrong.getMessage().contains("image 1 has 5 values"), wrong.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Charts.images("", new float[0][], side, 2));
    }
}
