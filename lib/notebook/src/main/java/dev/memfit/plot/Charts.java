package dev.memfit.plot;

import dev.memfit.memory.MemorySample;
import dev.memfit.memory.MemoryTimeline;
import org.knowm.xchart.AnnotationLine;
import org.knowm.xchart.AnnotationText;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.style.AxesChartStyler;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.Rectangle;
import java.awt.RenderingHints;
import java.awt.font.FontRenderContext;
import java.awt.image.BufferedImage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * Chart factories that return images for inline display in notebooks ({@code display(image)}) or for files.
 *
 * <p>Series are drawn in the iteration order of the map passed in, so pass a {@link LinkedHashMap} to choose the
 * order. The JDK's unordered maps ({@code Map.of}, {@code Map.copyOf}, {@link HashMap}) have no meaningful order:
 * their series are sorted by name so that the same call always draws the same picture. Legends sit outside the plot
 * area so they never cover data, and tick labels keep their leading zero ({@code 0.5}, not {@code .5}).
 */
public final class Charts {

    /** Width of the plot area and axes; the legend is added to the right of it. */
    private static final int PLOT_WIDTH = 700;
    private static final int HEIGHT = 440;
    private static final double MIB = 1024.0 * 1024.0;
    private static final FontRenderContext FONTS = new FontRenderContext(null, true, true);

    /** Matplotlib's "tab10" colours: distinct and familiar from the Python side. */
    static final Color[] PALETTE = {
        new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c), new Color(0xd62728), new Color(0x9467bd),
        new Color(0x8c564b), new Color(0xe377c2), new Color(0x7f7f7f), new Color(0xbcbd22), new Color(0x17becf),
    };
    /** Highlighted scatter subsets: colours not in {@link #PALETTE}, so they stand out from any group. */
    static final Color[] HIGHLIGHTS = {Color.BLACK, new Color(0xffd700), new Color(0x00ff7f)};

    private static final Color HEAP_COLOUR = PALETTE[0];
    private static final Color ANON_COLOUR = PALETTE[1];
    private static final Color DEVICE_COLOUR = PALETTE[2];
    private static final Color NATIVE_COLOUR = PALETTE[3];
    private static final Color FILE_COLOUR = PALETTE[4];
    private static final BasicStroke SOLID = new BasicStroke(2f);
    private static final BasicStroke[] DASHED = {
        new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[]{7f, 5f}, 0f),
        new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[]{2f, 4f}, 0f),
    };
    private static final String MEASURED = " (measured)";
    private static final String EXPECTED = " (expected)";

    /** Scale of the x axis of {@link #lines(String, String, String, double[], Map, XScale)}. */
    public enum XScale {
        /** Evenly spaced values. */
        LINEAR,
        /** Decades evenly spaced, for sizes such as batch sizes 16 .. 16384; every x must be positive. */
        LOG
    }

    private Charts() {
    }

    /**
     * Loss curves, one line per run, against the epoch (from 1), with the y axis labelled "loss".
     *
     * @param title the chart title
     * @param curves run name to per-epoch loss, in display order
     * @return the image
     * @see #lossCurves(String, String, Map)
     */
    public static BufferedImage lossCurves(String title, Map<String, double[]> curves) {
        return lossCurves(title, "loss", curves);
    }

    /**
     * Loss curves, one line per run, against the epoch (from 1). Later runs are dashed so identical curves stay
     * visible on top of each other.
     *
     * @param title the chart title
     * @param yLabel the y axis label, such as "loss per document" or "ELBO loss"
     * @param curves run name to per-epoch loss, in display order (a {@link LinkedHashMap})
     * @return the image
     */
    public static BufferedImage lossCurves(String title, String yLabel, Map<String, double[]> curves) {
        return image(lossCurvesChart(title, yLabel, curves));
    }

    static XYChart lossCurvesChart(String title, String yLabel, Map<String, double[]> curves) {
        return curvesChart(title, "epoch", yLabel, curves, true);
    }

    /**
     * One line per run against 1, 2, 3, ...; NaN values break a line and leave the x range. The first run is solid,
     * later ones dashed and dotted in turn, so identical curves stay visible on top of each other.
     */
    private static XYChart curvesChart(String title, String xLabel, String yLabel, Map<String, double[]> curves,
                                       boolean markShortCurves) {
        var entries = ordered(curves);
        XYChart chart = xy(title, xLabel, yLabel, entries.stream().map(Map.Entry::getKey).toList());
        Range xRange = new Range();
        Range yRange = new Range();
        int run = 0;
        for (Map.Entry<String, double[]> curve : entries) {
            double[] y = curve.getValue();
            double[] x = new double[y.length];
            for (int i = 0; i < y.length; i++) {
                x[i] = i + 1;
                if (!Double.isNaN(y[i])) {
                    xRange.add(x[i]);
                }
            }
            yRange.add(y);
            XYSeries series = chart.addSeries(curve.getKey(), x, y);
            series.setMarker(markShortCurves && y.length <= 40 ? SeriesMarkers.CIRCLE : SeriesMarkers.NONE);
            series.setLineStyle(run == 0 ? SOLID : DASHED[(run - 1) % DASHED.length]);
            run++;
        }
        decimals(chart.getStyler(), xRange, yRange, false);
        return chart;
    }

    /**
     * The loss of every optimizer step, one line per run, against the step (from 1). A run that did not take a step
     * has {@link Double#NaN} there and its line breaks, so a run that starts late (resumed from a checkpoint) or stops
     * early (crashed) is drawn over the steps it took only. The first run is solid, later ones dashed and dotted in
     * turn, so identical curves stay visible on top of each other.
     *
     * @param title the chart title
     * @param yLabel the y axis label, such as "loss per document"
     * @param curves run name to the loss of each step (NaN where the run took no such step), in display order
     * @return the image
     */
    public static BufferedImage stepLosses(String title, String yLabel, Map<String, double[]> curves) {
        return image(stepLossesChart(title, yLabel, curves));
    }

    static XYChart stepLossesChart(String title, String yLabel, Map<String, double[]> curves) {
        return curvesChart(title, "optimizer step", yLabel, curves, false);
    }

    /**
     * Memory over time for one or more probe timelines, in MiB: heap in use, memfit's own native allocations,
     * resident memory (anonymous and file-backed) and device memory where measured. The marks recorded with
     * {@code MemoryProbe.mark(label)} are drawn as thin vertical lines with their labels at the top.
     *
     * @param title the chart title
     * @param timelines the timelines; each adds its series, prefixed with its name when there are several, in one
     *        line style per timeline (solid, dashed, dotted) and one colour per quantity
     * @return the image
     */
    public static BufferedImage memoryTimeline(String title, MemoryTimeline... timelines) {
        return image(memoryTimelineChart(title, timelines));
    }

    /**
     * Memory growth over time: each quantity of {@link #memoryTimeline} minus its value when the probe started, so
     * what the run added reads directly against the JVM and PyTorch baseline it sits on, with a dashed line at the
     * size of the data for comparison ("did the data land in this kind of memory?").
     *
     * @param title the chart title
     * @param dataBytes the data's size, drawn as a horizontal line; 0 or less for none
     * @param timelines the timelines, as for {@link #memoryTimeline}
     * @return the image
     */
    public static BufferedImage memoryGrowth(String title, long dataBytes, MemoryTimeline... timelines) {
        return image(memoryGrowthChart(title, dataBytes, timelines));
    }

    static XYChart memoryTimelineChart(String title, MemoryTimeline... timelines) {
        return memoryChart(title, false, 0, timelines);
    }

    static XYChart memoryGrowthChart(String title, long dataBytes, MemoryTimeline... timelines) {
        return memoryChart(title, true, dataBytes, timelines);
    }

    private static XYChart memoryChart(String title, boolean growth, long dataBytes, MemoryTimeline... timelines) {
        List<String> names = new ArrayList<>();
        for (MemoryTimeline timeline : timelines) {
            String prefix = prefix(timeline, timelines.length);
            for (String quantity : List.of("heap used", "native (memfit)", "RSS anonymous", "RSS file pages", "device")) {
                names.add(prefix + quantity);
            }
        }
        String dataName = String.format(Locale.ROOT, "data size (%.1f MiB)", dataBytes / MIB);
        if (dataBytes > 0) {
            names.add(dataName);
        }
        XYChart chart = xy(title, "seconds", growth ? "MiB more than at the start" : "MiB", names);
        Range xRange = new Range();
        Range yRange = new Range();
        for (int run = 0; run < timelines.length; run++) {
            MemoryTimeline timeline = timelines[run];
            String prefix = prefix(timeline, timelines.length);
            BasicStroke stroke = run == 0 ? SOLID : DASHED[(run - 1) % DASHED.length];
            addMemorySeries(chart, timeline, prefix + "heap used", MemorySample::heapUsed, HEAP_COLOUR, stroke, growth, xRange, yRange);
            addMemorySeries(chart, timeline, prefix + "native (memfit)", MemorySample::nativeAllocated, NATIVE_COLOUR,
                    stroke, growth, xRange, yRange);
            addMemorySeries(chart, timeline, prefix + "RSS anonymous", MemorySample::rssAnon, ANON_COLOUR, stroke, growth, xRange, yRange);
            addMemorySeries(chart, timeline, prefix + "RSS file pages", MemorySample::rssFile, FILE_COLOUR, stroke, growth, xRange, yRange);
            addMemorySeries(chart, timeline, prefix + "device", MemorySample::device, DEVICE_COLOUR, stroke, growth, xRange, yRange);
            for (MemoryTimeline.Mark mark : timeline.marks()) {
                xRange.add(mark.seconds());
            }
        }
        if (dataBytes > 0 && !xRange.empty()) {
            XYSeries data = chart.addSeries(dataName, new double[]{xRange.min, xRange.max},
                    new double[]{dataBytes / MIB, dataBytes / MIB});
            data.setMarker(SeriesMarkers.NONE);
            data.setLineColor(Color.GRAY);
            data.setLineStyle(DASHED[0]);
            yRange.add(dataBytes / MIB);
        }
        if (!growth || yRange.empty() || yRange.min >= 0) {
            chart.getStyler().setYAxisMin(0.0);   // memory from zero: the size of a change reads against the whole
        } else if (yRange.min < -0.3 * Math.max(yRange.max, 1)) {
            // a collection that frees more heap than the run grows (garbage from before the probe) would squash
            // every other line: the axis stops at -30% of the top, and the heap line leaves the plot downwards
            chart.getStyler().setYAxisMin(-0.3 * Math.max(yRange.max, 1));
        }
        addMarks(chart, timelines, xRange, yRange);
        decimals(chart.getStyler(), xRange, yRange, false);
        return chart;
    }

    private static String prefix(MemoryTimeline timeline, int timelines) {
        return timelines > 1 ? timeline.name() + ": " : "";
    }

    /**
     * Draws each mark as a thin vertical line with its label near the top. The y axis is raised by a fifth so the
     * labels sit above the data, and neighbouring labels alternate between two heights so close marks stay legible.
     */
    private static void addMarks(XYChart chart, MemoryTimeline[] timelines, Range xRange, Range yRange) {
        if (Arrays.stream(timelines).allMatch(t -> t.marks().isEmpty())) {
            return;
        }
        double top = yRange.empty() ? 1 : Math.max(yRange.max, 1e-9);
        chart.getStyler().setYAxisMax(top * 1.2);
        chart.getStyler().setAnnotationLineColor(new Color(0x555555));
        chart.getStyler().setAnnotationLineStroke(new BasicStroke(1f));
        chart.getStyler().setAnnotationTextFontColor(Color.DARK_GRAY);
        chart.getStyler().setAnnotationTextFont(new Font(Font.SANS_SERIF, Font.PLAIN, 10));
        // AnnotationText centres its text on (x, y): shift it right of its line by half its width, converting pixels
        // to seconds with the plot width (approximate: the y axis labels take a little of it).
        double secondsPerPixel = xRange.empty() || xRange.max <= xRange.min ? 0 : (xRange.max - xRange.min) / (PLOT_WIDTH - 80.0);
        Font font = chart.getStyler().getAnnotationTextFont();
        // Every mark gets its line; a label is drawn on the first of the two rows where it does not run into the
        // label before it, and left out when both are taken (many close marks would otherwise print over each other).
        List<MarkPlace> places = new ArrayList<>();
        for (MemoryTimeline timeline : timelines) {
            String prefix = prefix(timeline, timelines.length);
            for (MemoryTimeline.Mark mark : timeline.marks()) {
                places.add(new MarkPlace(prefix + mark.label(), mark.seconds()));
            }
        }
        places.sort(Comparator.comparingDouble(MarkPlace::seconds));
        double[] rowEnds = {Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY};
        double[] rowHeights = {1.14, 1.06};
        for (MarkPlace place : places) {
            chart.addAnnotation(new MarkLine(place.seconds()));
            // a third wider than the text: the plot area's width in pixels is only estimated; with no time span
            // (every sample at one instant) one label per row is all that can be placed
            double width = secondsPerPixel > 0 ? (font.getStringBounds(place.label(), FONTS).getWidth() * 1.35 + 8) * secondsPerPixel
                    : Double.POSITIVE_INFINITY;
            // right of its line, but moved left where it would run past the end of the axis
            double start = Double.isInfinite(width) ? place.seconds() : Math.max(xRange.min, Math.min(place.seconds(), xRange.max - width));
            for (int row = 0; row < rowEnds.length; row++) {
                if (start >= rowEnds[row]) {
                    double centre = Double.isInfinite(width) ? place.seconds() : start + width / 2;
                    chart.addAnnotation(new MarkText(place.label(), place.seconds(), centre, top * rowHeights[row]));
                    rowEnds[row] = start + width;
                    break;
                }
            }
        }
    }

    private record MarkPlace(String label, double seconds) {
    }

    /** The vertical line of a {@link MemoryTimeline.Mark}; a type of its own so tests can find it. */
    static final class MarkLine extends AnnotationLine {
        final double seconds;

        MarkLine(double seconds) {
            super(seconds, true, false);
            this.seconds = seconds;
        }
    }

    /** The label of a {@link MemoryTimeline.Mark}. */
    static final class MarkText extends AnnotationText {
        final String label;
        final double seconds;
        private final double centre;

        MarkText(String label, double seconds, double x, double y) {
            super(label, x, y, false);
            this.label = label;
            this.seconds = seconds;
            this.centre = x;
        }

        /** Where the label's centre sits on the time axis. */
        double x() {
            return centre;
        }
    }

    private static void addMemorySeries(XYChart chart, MemoryTimeline timeline, String name,
                                        ToLongFunction<MemorySample> quantity, Color colour, BasicStroke stroke,
                                        boolean growth, Range xRange, Range yRange) {
        List<Double> x = new ArrayList<>();
        List<Double> y = new ArrayList<>();
        long start = -1;
        for (MemorySample sample : timeline.samples()) {
            long value = quantity.applyAsLong(sample);
            if (value >= 0) {   // -1: not measurable here (no device, no /proc)
                if (start < 0) {
                    start = value;
                }
                double shown = (growth ? value - start : value) / MIB;
                x.add(sample.seconds());
                y.add(shown);
                xRange.add(sample.seconds());
                yRange.add(shown);
            }
        }
        if (!x.isEmpty()) {
            XYSeries series = chart.addSeries(name, x, y);
            series.setMarker(SeriesMarkers.NONE);
            series.setLineColor(colour);
            series.setLineStyle(stroke);
        }
    }

    /**
     * Grouped bars: one group per category, one bar per series. Every category label is shown: long labels are
     * turned upright and the image grows to hold them.
     *
     * @param title the chart title
     * @param yLabel the value axis label
     * @param categories the category labels
     * @param series series name to one value per category, in display order (a {@link LinkedHashMap})
     * @return the image
     */
    public static BufferedImage bars(String title, String yLabel, List<String> categories, Map<String, double[]> series) {
        return image(barsChart(title, yLabel, categories, series));
    }

    static CategoryChart barsChart(String title, String yLabel, List<String> categories, Map<String, double[]> series) {
        var entries = ordered(series);
        for (Map.Entry<String, double[]> entry : entries) {
            if (entry.getValue().length != categories.size()) {
                throw new IllegalArgumentException("series '" + entry.getKey() + "' has " + entry.getValue().length
                        + " values for " + categories.size() + " categories: give one value per category");
            }
        }
        int width = PLOT_WIDTH + 100;
        // XChart drops a tick label that would stick out of the image or overlap its neighbour; when the widest
        // label does not fit its slot lying down, stand the labels upright (a label then needs only its height)
        // and make the image taller by the longest label.
        Font font = new CategoryChartBuilder().build().getStyler().getAxisTickLabelsFont();
        double widest = categories.stream().mapToDouble(c -> font.getStringBounds(c, FONTS).getWidth()).max().orElse(0);
        double slot = (width - 120.0) / Math.max(1, categories.size());
        boolean upright = widest * 1.1 > slot;
        CategoryChart chart = new CategoryChartBuilder().width(width)
                .height(upright ? HEIGHT + (int) Math.ceil(widest) : HEIGHT).title(title)
                .xAxisTitle("").yAxisTitle(yLabel).build();
        style(chart.getStyler());
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
        chart.getStyler().setLegendLayout(Styler.LegendLayout.Horizontal);
        chart.getStyler().setLegendVisible(entries.size() > 1);
        chart.getStyler().setLabelsVisible(false);
        if (upright) {
            chart.getStyler().setXAxisLabelRotation(90);
            // Upright labels start at the axis, not centred in the band the longest one needs.
            chart.getStyler().setXAxisLabelAlignmentVertical(AxesChartStyler.TextAlignment.Right);
        }
        Range values = new Range();
        int colour = 0;
        for (Map.Entry<String, double[]> entry : entries) {
            List<Double> list = new ArrayList<>();
            for (double v : entry.getValue()) {
                list.add(v);
                values.add(v);
            }
            chart.addSeries(entry.getKey(), categories, list).setFillColor(PALETTE[colour++ % PALETTE.length]);
        }
        values.add(0);   // bars start at zero
        chart.getStyler().setYAxisDecimalPattern(pattern(values, false));
        return chart;
    }

    /**
     * Lines through points on a linear x axis, for measured curves such as throughput against threads.
     *
     * @param title the chart title
     * @param xLabel the x axis label
     * @param yLabel the y axis label
     * @param x shared x values
     * @param series series name to y values, in display order (a {@link LinkedHashMap}); see
     *        {@link #lines(String, String, String, double[], Map, XScale)} for measured/expected pairs
     * @return the image
     */
    public static BufferedImage lines(String title, String xLabel, String yLabel, double[] x, Map<String, double[]> series) {
        return lines(title, xLabel, yLabel, x, series, XScale.LINEAR);
    }

    /**
     * Lines through points, for measured curves such as throughput against threads or memory against batch size.
     * Series named {@code "NAME (measured)"} and {@code "NAME (expected)"} are drawn as a pair: the same colour, the
     * measured one solid with points, the expected one dashed.
     *
     * @param title the chart title
     * @param xLabel the x axis label
     * @param yLabel the y axis label
     * @param x shared x values
     * @param series series name to y values, in display order (a {@link LinkedHashMap})
     * @param xScale {@link XScale#LOG} where the x values span decades
     * @return the image
     */
    public static BufferedImage lines(String title, String xLabel, String yLabel, double[] x, Map<String, double[]> series,
                                      XScale xScale) {
        return image(linesChart(title, xLabel, yLabel, x, series, xScale));
    }

    static XYChart linesChart(String title, String xLabel, String yLabel, double[] x, Map<String, double[]> series,
                              XScale xScale) {
        var entries = ordered(series);
        XYChart chart = xy(title, xLabel, yLabel, entries.stream().map(Map.Entry::getKey).toList());
        boolean log = xScale == XScale.LOG;
        if (log) {
            for (double v : x) {
                if (!(v > 0)) {
                    throw new IllegalArgumentException("x value " + v + " cannot go on a log axis: use XScale.LINEAR"
                            + " or drop the values <= 0");
                }
            }
            chart.getStyler().setXAxisLogarithmic(true);
        }
        // One colour per pair name: "A (measured)" and "A (expected)" share one, every other series has its own.
        Map<String, Color> colours = new HashMap<>();
        Range xRange = new Range();
        Range yRange = new Range();
        xRange.add(x);
        for (Map.Entry<String, double[]> entry : entries) {
            String name = entry.getKey();
            if (entry.getValue().length != x.length) {
                throw new IllegalArgumentException("series '" + name + "' has " + entry.getValue().length + " values for "
                        + x.length + " x values: give one y per x");
            }
            yRange.add(entry.getValue());
            Color colour = colours.computeIfAbsent(pairName(name), key -> PALETTE[colours.size() % PALETTE.length]);
            XYSeries line = chart.addSeries(name, x, entry.getValue());
            line.setLineColor(colour);
            line.setMarkerColor(colour);
            if (name.endsWith(EXPECTED)) {
                line.setLineStyle(DASHED[0]);
                line.setMarker(SeriesMarkers.NONE);
            } else {
                line.setLineStyle(SOLID);
                line.setMarker(x.length <= 40 ? SeriesMarkers.CIRCLE : SeriesMarkers.NONE);
            }
        }
        decimals(chart.getStyler(), xRange, yRange, log);
        return chart;
    }

    /** "A (measured)" and "A (expected)" give "A"; any other name is its own key. */
    private static String pairName(String name) {
        if (name.endsWith(MEASURED)) {
            return name.substring(0, name.length() - MEASURED.length());
        }
        if (name.endsWith(EXPECTED)) {
            return name.substring(0, name.length() - EXPECTED.length());
        }
        return name;
    }

    /**
     * Points in the plane, one colour per group, such as a latent space coloured by a known label.
     *
     * @param title the chart title
     * @param xLabel the x axis label
     * @param yLabel the y axis label
     * @param groups group name to points (rows of x, y), in display order (a {@link LinkedHashMap})
     * @return the image
     */
    public static BufferedImage scatter(String title, String xLabel, String yLabel, Map<String, double[][]> groups) {
        return scatter(title, xLabel, yLabel, groups, Map.of());
    }

    /**
     * Points in the plane, one colour per group, with highlighted subsets drawn on top: each highlighted subset
     * (such as the genes of a known program among all genes) gets a colour no group has, a diamond marker and its
     * own legend entry. The highlighted points are usually also in a group; they are drawn again, above it.
     *
     * @param title the chart title
     * @param xLabel the x axis label
     * @param yLabel the y axis label
     * @param groups group name to points (rows of x, y), in display order (a {@link LinkedHashMap})
     * @param highlighted subset name to points (rows of x, y), drawn after every group
     * @return the image
     */
    public static BufferedImage scatter(String title, String xLabel, String yLabel, Map<String, double[][]> groups,
                                        Map<String, double[][]> highlighted) {
        return image(scatterChart(title, xLabel, yLabel, groups, highlighted));
    }

    static XYChart scatterChart(String title, String xLabel, String yLabel, Map<String, double[][]> groups,
                                Map<String, double[][]> highlighted) {
        var entries = ordered(groups);
        var highlights = ordered(highlighted);
        List<String> names = new ArrayList<>();
        entries.forEach(e -> names.add(e.getKey()));
        highlights.forEach(e -> names.add(e.getKey()));
        XYChart chart = xy(title, xLabel, yLabel, names);
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
        chart.getStyler().setMarkerSize(5);
        Range xRange = new Range();
        Range yRange = new Range();
        int index = 0;
        for (Map.Entry<String, double[][]> group : entries) {
            addPoints(chart, group.getKey(), group.getValue(), xRange, yRange).setMarker(SeriesMarkers.CIRCLE)
                    .setMarkerColor(PALETTE[index++ % PALETTE.length]);
        }
        index = 0;
        for (Map.Entry<String, double[][]> subset : highlights) {
            // XChart paints series in insertion order, so these land on top of the groups.
            addPoints(chart, subset.getKey(), subset.getValue(), xRange, yRange).setMarker(SeriesMarkers.DIAMOND)
                    .setMarkerColor(HIGHLIGHTS[index++ % HIGHLIGHTS.length]);
        }
        decimals(chart.getStyler(), xRange, yRange, false);
        return chart;
    }

    private static XYSeries addPoints(XYChart chart, String name, double[][] points, Range xRange, Range yRange) {
        double[] x = new double[points.length];
        double[] y = new double[points.length];
        for (int i = 0; i < points.length; i++) {
            x[i] = points[i][0];
            y[i] = points[i][1];
        }
        xRange.add(x);
        yRange.add(y);
        return chart.addSeries(name, x, y);
    }

    /**
     * A grid of grayscale images, such as particle images: each image is scaled to its own minimum (black) ..
     * maximum (white), so faint and bright images are equally readable; a constant image is mid-grey. Drawn by hand
     * with Java2D: XChart's heat map takes one colour scale for the whole chart, not one per tile.
     *
     * @param title the title above the grid, or an empty string for none
     * @param images the images, each {@code side * side} values in row-major order (row 0 at the top)
     * @param side the width and height of each image in pixels
     * @param columns images per row of the grid
     * @return the image
     */
    public static BufferedImage images(String title, float[][] images, int side, int columns) {
        if (side <= 0 || columns <= 0) {
            throw new IllegalArgumentException("side (" + side + ") and columns (" + columns + ") must be positive");
        }
        if (images.length == 0) {
            throw new IllegalArgumentException("no images to draw: pass at least one");
        }
        for (int i = 0; i < images.length; i++) {
            if (images[i].length != (long) side * side) {
                throw new IllegalArgumentException("image " + i + " has " + images[i].length + " values; expected side * side = "
                        + (long) side * side);
            }
        }
        int cols = Math.min(columns, images.length);
        Rectangle last = tileBounds(title, images.length - 1, side, columns);
        Font titleFont = new Font(Font.SANS_SERIF, Font.BOLD, 14);
        int titleWidth = title.isEmpty() ? 0 : (int) Math.ceil(titleFont.getStringBounds(title,
                new java.awt.font.FontRenderContext(null, true, true)).getWidth()) + 2 * TILE_GAP;
        // wide enough for the title too, so it is never cut off
        int width = Math.max(Math.max(tileBounds(title, cols - 1, side, columns).x + last.width + TILE_GAP, 200), titleWidth);
        int height = last.y + last.height + TILE_GAP;
        BufferedImage out = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = out.createGraphics();
        try {
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, height);
            if (!title.isEmpty()) {
                g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
                g.setColor(Color.BLACK);
                g.setFont(titleFont);
                g.drawString(title, TILE_GAP, TITLE_HEIGHT - 10);
            }
        } finally {
            g.dispose();
        }
        int scale = tileScale(side);
        for (int i = 0; i < images.length; i++) {
            float[] image = images[i];
            float min = Float.POSITIVE_INFINITY;
            float max = Float.NEGATIVE_INFINITY;
            for (float v : image) {
                min = Math.min(min, v);
                max = Math.max(max, v);
            }
            Rectangle tile = tileBounds(title, i, side, columns);
            for (int y = 0; y < side; y++) {
                for (int x = 0; x < side; x++) {
                    int grey = max > min ? Math.round((image[y * side + x] - min) / (max - min) * 255f) : 128;
                    int rgb = grey << 16 | grey << 8 | grey;
                    for (int dy = 0; dy < scale; dy++) {
                        for (int dx = 0; dx < scale; dx++) {
                            out.setRGB(tile.x + x * scale + dx, tile.y + y * scale + dy, rgb);
                        }
                    }
                }
            }
        }
        return out;
    }

    private static final int TILE_GAP = 4;
    private static final int TITLE_HEIGHT = 28;
    private static final int MIN_TILE = 96;

    /** Whole pixels per image pixel: small images are blown up to at least {@value #MIN_TILE} pixels. */
    static int tileScale(int side) {
        return Math.max(1, (MIN_TILE + side - 1) / side);
    }

    /** Where image {@code index} lands in the grid drawn by {@link #images}. */
    static Rectangle tileBounds(String title, int index, int side, int columns) {
        int tile = side * tileScale(side);
        int top = title.isEmpty() ? 0 : TITLE_HEIGHT;
        return new Rectangle(TILE_GAP + (index % columns) * (tile + TILE_GAP),
                top + TILE_GAP + (index / columns) * (tile + TILE_GAP), tile, tile);
    }

    /**
     * Series in the order to draw: the map's own order, or sorted by name for the JDK's unordered maps, whose order
     * changes from run to run ({@code Map.of} randomizes it per JVM).
     */
    static <V> List<Map.Entry<String, V>> ordered(Map<String, V> map) {
        List<Map.Entry<String, V>> entries = new ArrayList<>(map.entrySet());
        if (unordered(map)) {
            entries.sort(Map.Entry.comparingByKey(Comparator.naturalOrder()));
        }
        return entries;
    }

    private static boolean unordered(Map<?, ?> map) {
        return map.getClass().getName().startsWith("java.util.ImmutableCollections$Map") || map.getClass() == HashMap.class;
    }

    /**
     * A chart with the legend outside the plot on the right, in an image wide enough for the plot and the legend.
     */
    private static XYChart xy(String title, String xLabel, String yLabel, List<String> seriesNames) {
        Font legendFont = new XYChartBuilder().build().getStyler().getLegendFont();
        double legend = seriesNames.stream().mapToDouble(n -> legendFont.getStringBounds(n, FONTS).getWidth()).max().orElse(0);
        int width = PLOT_WIDTH + (int) Math.ceil(legend) + 70;   // 70: the legend's line sample and padding
        XYChart chart = new XYChartBuilder().width(width).height(HEIGHT).title(title).xAxisTitle(xLabel)
                .yAxisTitle(yLabel).build();
        style(chart.getStyler());
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setMarkerSize(5);
        return chart;
    }

    private static void style(AxesChartStyler styler) {
        styler.setChartBackgroundColor(Color.WHITE);
        styler.setLegendBorderColor(Color.LIGHT_GRAY);
    }

    /** Sets tick label patterns with a leading zero and as many decimals as the data's range needs. */
    private static void decimals(AxesChartStyler styler, Range x, Range y, boolean logX) {
        styler.setXAxisDecimalPattern(pattern(x, logX));
        styler.setYAxisDecimalPattern(pattern(y, false));
    }

    /**
     * A pattern such as {@code "#,##0.##"}: always a digit before the point. Ticks fall at about a tenth of the
     * range, in steps of 1, 2, 2.5 or 5, so one decimal more than the tenth's magnitude shows them exactly; on a log
     * axis the smallest value decides.
     */
    static String pattern(Range range, boolean log) {
        int decimals;
        if (range.empty()) {
            decimals = 2;
        } else if (log) {
            decimals = (int) Math.ceil(-Math.log10(range.min));
        } else {
            double span = range.max - range.min;
            double magnitude = span > 0 ? span : Math.max(Math.abs(range.max), 1e-12);
            decimals = (int) Math.ceil(-Math.log10(magnitude / 10)) + 1;
        }
        decimals = Math.clamp(decimals, 0, 10);
        return decimals == 0 ? "#,##0" : "#,##0." + "#".repeat(decimals);
    }

    /** The smallest and largest finite values seen. */
    static final class Range {
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;

        void add(double v) {
            if (Double.isFinite(v)) {
                min = Math.min(min, v);
                max = Math.max(max, v);
            }
        }

        void add(double[] values) {
            for (double v : values) {
                add(v);
            }
        }

        boolean empty() {
            return min > max;
        }
    }

    /**
     * Renders any XChart chart to an image.
     *
     * @param chart the chart
     * @return the image
     */
    public static BufferedImage image(Chart<?, ?> chart) {
        return BitmapEncoder.getBufferedImage(chart);
    }
}
