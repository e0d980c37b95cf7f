package dev.memfit.memory;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What a run is expected to hold, component by component, and where: the Java heap, native host memory, memory
 * mappings (address space backed by files), the accelerator (or host memory standing in for it on a CPU), and the
 * page cache the run would like to keep the data warm.
 *
 * @param components the parts, in display order
 */
public record MemoryEstimate(List<Component> components) {

    /** Where a component lives. */
    public enum Where {
        /** The Java heap ({@code -Xmx} bounds it). */
        HEAP,
        /** Native host memory memfit allocates (data in memory, batch buffers). */
        NATIVE,
        /** Files mapped into the address space: resident only while in the page cache, reclaimable. */
        MAPPED,
        /** The training device: GPU memory, or host memory when training on the CPU. */
        DEVICE,
        /** The OS page cache the run would like, to read the data from RAM after the first epoch. */
        PAGE_CACHE,
        /**
         * The process before the run: the JVM, its libraries, PyTorch's native libraries and whatever the notebook
         * or program already holds (its resident memory, measured before the run).
         */
        PROCESS
    }

    /**
     * One part of the estimate.
     *
     * @param name what it is, such as "loader batch buffers (3 x 256 x 8.0 KB)"
     * @param where where it lives
     * @param bytes its size
     */
    public record Component(String name, Where where, long bytes) {
    }

    /**
     * The total of one place.
     *
     * @param where the place
     * @return bytes
     */
    public long total(Where where) {
        return components.stream().filter(c -> c.where() == where).mapToLong(Component::bytes).sum();
    }

    /**
     * The resident memory the whole process is expected to peak at: what it held before the run ({@link Where#PROCESS},
     * when the estimator was given it), plus the heap and native memory the run adds, the mapped data's pages as an
     * epoch touches them (at most the page cache the run wants), and, when the training device is this host's CPU,
     * the model's memory too. This, not memfit's own allocations, is what a machine's or a container's memory must
     * hold; at small sizes the JVM and PyTorch dominate it.
     *
     * @param deviceIsHost whether the model trains on this host's CPU, so device memory is this process's memory
     * @return bytes
     */
    public long residentPeak(boolean deviceIsHost) {
        long filePages = Math.min(total(Where.MAPPED), total(Where.PAGE_CACHE));
        return total(Where.PROCESS) + total(Where.HEAP) + total(Where.NATIVE) + filePages
                + (deviceIsHost ? total(Where.DEVICE) : 0);
    }

    /**
     * One line of the breakdown: a component, or the total of one place.
     *
     * @param component what it is ("total" for a place's total)
     * @param where where it lives, in words ("native", "page cache", ...)
     * @param mebibytes its size in MiB (2^20 bytes), to two decimals
     */
    public record Row(String component, String where, double mebibytes) {
    }

    /**
     * The breakdown: each component, then the total of each place that holds anything.
     *
     * @return the rows, in that order
     */
    public List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        for (Component component : components) {
            rows.add(new Row(component.name(), words(component.where()), mebibytes(component.bytes())));
        }
        for (Where place : Where.values()) {
            if (total(place) > 0) {
                rows.add(new Row("total", words(place), mebibytes(total(place))));
            }
        }
        return rows;
    }

    private static String words(Where where) {
        return where.name().toLowerCase(Locale.ROOT).replace('_', ' ');
    }

    private static double mebibytes(long bytes) {
        return Math.round(bytes * 100.0 / (1 << 20)) / 100.0;
    }

    /** The breakdown as a text table (component, where, MiB), as the CLI and the notebooks print it. */
    @Override
    public String toString() {
        List<Row> rows = rows();
        String[] header = {"component", "where", "MiB"};
        int[] width = {header[0].length(), header[1].length(), header[2].length()};
        List<String[]> cells = new ArrayList<>();
        for (Row row : rows) {
            String[] line = {row.component(), row.where(), String.format(Locale.ROOT, "%.2f", row.mebibytes())};
            for (int i = 0; i < 3; i++) {
                width[i] = Math.max(width[i], line[i].length());
            }
            cells.add(line);
        }
        StringBuilder text = new StringBuilder("Memory estimate").append(System.lineSeparator());
        String format = " %-" + width[0] + "s | %-" + width[1] + "s | %" + width[2] + "s" + System.lineSeparator();
        text.append(String.format(Locale.ROOT, format, (Object[]) header));
        text.append("-".repeat(width[0] + width[1] + width[2] + 8)).append(System.lineSeparator());
        for (String[] line : cells) {
            text.append(String.format(Locale.ROOT, format, (Object[]) line));
        }
        return text.toString();
    }
}
