package dev.memfit.memory;

import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

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
     * The breakdown as a table: component, where, MiB (2^20 bytes).
     *
     * @return the table
     */
    public Table table() {
        StringColumn name = StringColumn.create("component");
        StringColumn where = StringColumn.create("where");
        DoubleColumn megabytes = DoubleColumn.create("MiB");
        for (Component component : components) {
            name.append(component.name());
            where.append(component.where().name().toLowerCase(Locale.ROOT).replace('_', ' '));
            megabytes.append(Math.round(component.bytes() * 100.0 / (1 << 20)) / 100.0);
        }
        for (Where place : Where.values()) {
            if (total(place) > 0) {
                name.append("total");
                where.append(place.name().toLowerCase(Locale.ROOT).replace('_', ' '));
                megabytes.append(Math.round(total(place) * 100.0 / (1 << 20)) / 100.0);
            }
        }
        return Table.create("Memory estimate").addColumns(name, where, megabytes);
    }

    @Override
    public String toString() {
        return table().printAll();
    }
}
