package dev.memfit.plot;

import dev.memfit.memory.MemorySample;
import dev.memfit.memory.MemoryTimeline;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.image.BufferedImage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * Chart factories that return images for inline display in notebooks ({@code display(image)}) or for files.
 */
public final class Charts {

    private static final int WIDTH = 760;
    private static final int HEIGHT = 420;
    private static final double MB = 1024.0 * 1024.0;

    private Charts() {
    }

    /**
     * Loss curves, one line per run, against the epoch (from 1).
     *
     * @param title the chart title
     * @param curves run name to per-epoch loss, in display order
     * @return the image
     */
    public static BufferedImage lossCurves(String title, Map<String, double[]> curves) {
        XYChart chart = xy(title, "epoch", "loss per document");
        int run = 0;
        for (Map.Entry<String, double[]> curve : curves.entrySet()) {
            double[] y = curve.getValue();
            double[] x = new double[y.length];
            for (int i = 0; i < y.length; i++) {
                x[i] = i + 1;
            }
            XYSeries series = chart.addSeries(curve.getKey(), x, y);
            // Later runs are dashed so identical curves stay visible on top of each other.
            series.setMarker(y.length <= 40 ? SeriesMarkers.CIRCLE : SeriesMarkers.NONE);
            if (run++ > 0) {
                series.setLineStyle(DASHED[0]);
            }
        }
        return image(chart);
    }

    /**
     * Memory over time for one or more probe timelines: heap in use, memfit's native memory and resident memory
     * (anonymous and file-backed), in MiB.
     *
     * @param title the chart title
     * @param timelines the timelines; each adds its series, prefixed with its name when there are several
     * @return the image
     */
    public static BufferedImage memoryTimeline(String title, MemoryTimeline... timelines) {
        XYChart chart = xy(title, "seconds", "MiB");
        for (int run = 0; run < timelines.length; run++) {
            MemoryTimeline timeline = timelines[run];
            String prefix = timelines.length > 1 ? timeline.name() + ": " : "";
            // One colour per quantity, one line style per run, so runs compare at a glance.
            java.awt.BasicStroke stroke = run == 0 ? SOLID : DASHED[(run - 1) % DASHED.length];
            addMemorySeries(chart, timeline, prefix + "heap used", MemorySample::heapUsed, HEAP_COLOUR, stroke);
            addMemorySeries(chart, timeline, prefix + "RSS anonymous", MemorySample::rssAnon, ANON_COLOUR, stroke);
            addMemorySeries(chart, timeline, prefix + "RSS file pages", MemorySample::rssFile, FILE_COLOUR, stroke);
            if (timeline.peak(MemorySample::device) >= 0) {
                addMemorySeries(chart, timeline, prefix + "device", MemorySample::device, DEVICE_COLOUR, stroke);
            }
        }
        return image(chart);
    }

    private static final java.awt.Color HEAP_COLOUR = new java.awt.Color(0x1f77b4);
    private static final java.awt.Color ANON_COLOUR = new java.awt.Color(0xff7f0e);
    private static final java.awt.Color FILE_COLOUR = new java.awt.Color(0x9467bd);
    private static final java.awt.Color DEVICE_COLOUR = new java.awt.Color(0x2ca02c);
    private static final java.awt.BasicStroke SOLID = new java.awt.BasicStroke(2f);
    private static final java.awt.BasicStroke[] DASHED = {
        new java.awt.BasicStroke(2f, java.awt.BasicStroke.CAP_BUTT, java.awt.BasicStroke.JOIN_MITER, 10f, new float[]{7f, 5f}, 0f),
        new java.awt.BasicStroke(2f, java.awt.BasicStroke.CAP_BUTT, java.awt.BasicStroke.JOIN_MITER, 10f, new float[]{2f, 4f}, 0f),
    };

    private static void addMemorySeries(XYChart chart, MemoryTimeline timeline, String name,
                                        ToLongFunction<MemorySample> quantity, java.awt.Color colour,
                                        java.awt.BasicStroke stroke) {
        List<Double> x = new ArrayList<>();
        List<Double> y = new ArrayList<>();
        for (MemorySample sample : timeline.samples()) {
            long value = quantity.applyAsLong(sample);
            if (value >= 0) {
                x.add(sample.seconds());
                y.add(value / MB);
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
     * Grouped bars: one group per category, one bar per series.
     *
     * @param title the chart title
     * @param yLabel the value axis label
     * @param categories the category labels
     * @param series series name to one value per category
     * @return the image
     */
    public static BufferedImage bars(String title, String yLabel, List<String> categories, Map<String, double[]> series) {
        CategoryChart chart = new CategoryChartBuilder().width(WIDTH).height(HEIGHT).title(title)
                .xAxisTitle("").yAxisTitle(yLabel).build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
        chart.getStyler().setLegendLayout(Styler.LegendLayout.Horizontal);
        chart.getStyler().setLegendVisible(series.size() > 1);
        chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
        chart.getStyler().setLabelsVisible(false);
        if (categories.stream().mapToInt(String::length).max().orElse(0) * categories.size() > 70) {
            chart.getStyler().setXAxisLabelRotation(20);
        }
        for (Map.Entry<String, double[]> entry : series.entrySet()) {
            List<Double> values = new ArrayList<>();
            for (double v : entry.getValue()) {
                values.add(v);
            }
            chart.addSeries(entry.getKey(), categories, values);
        }
        return image(chart);
    }

    /**
     * Lines through points, for measured curves such as throughput against threads.
     *
     * @param title the chart title
     * @param xLabel the x axis label
     * @param yLabel the y axis label
     * @param x shared x values
     * @param series series name to y values
     * @return the image
     */
    public static BufferedImage lines(String title, String xLabel, String yLabel, double[] x, Map<String, double[]> series) {
        XYChart chart = xy(title, xLabel, yLabel);
        for (Map.Entry<String, double[]> entry : series.entrySet()) {
            chart.addSeries(entry.getKey(), x, entry.getValue());
        }
        return image(chart);
    }

    /**
     * Points in the plane, one colour per group, such as a latent space coloured by a known label.
     *
     * @param title the chart title
     * @param xLabel the x axis label
     * @param yLabel the y axis label
     * @param groups group name to points (rows of x, y)
     * @return the image
     */
    public static BufferedImage scatter(String title, String xLabel, String yLabel, Map<String, double[][]> groups) {
        XYChart chart = xy(title, xLabel, yLabel);
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
        chart.getStyler().setMarkerSize(4);
        for (Map.Entry<String, double[][]> group : groups.entrySet()) {
            double[][] points = group.getValue();
            double[] x = new double[points.length];
            double[] y = new double[points.length];
            for (int i = 0; i < points.length; i++) {
                x[i] = points[i][0];
                y[i] = points[i][1];
            }
            chart.addSeries(group.getKey(), x, y).setMarker(SeriesMarkers.CIRCLE);
        }
        return image(chart);
    }

    private static XYChart xy(String title, String xLabel, String yLabel) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(title).xAxisTitle(xLabel)
                .yAxisTitle(yLabel).build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
        chart.getStyler().setMarkerSize(5);
        return chart;
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
