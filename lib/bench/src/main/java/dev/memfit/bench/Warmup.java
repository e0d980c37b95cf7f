package dev.memfit.bench;

import dev.memfit.data.Batch;
import dev.memfit.data.Loader;

import dev.memfit.plot.Measure;

import java.lang.foreign.ValueLayout;
import java.time.Duration;

/**
 * Untimed epochs before a loader is timed, so that the timed epochs measure code the JIT has finished compiling, as
 * JMH's warm-up iterations do. The C baselines need none; without it, memfit's "steady" epochs of a page-cached file
 * (a tenth of a second each) fell in the JIT's first second: at 2 threads over sparse shards, epochs 2 and 3 of a
 * fresh JVM delivered 1.2-1.8 M cells/s and epochs 8 to 14 1.7-2.1 M (the loader's hand-off code is compiled, and
 * {@code ShardStore.readRow} recompiled after uncommon traps, during the first 1.5 s).
 */
final class Warmup {

    /** The benches' default warm-up. */
    static final Duration DEFAULT = Duration.ofSeconds(2);

    private static volatile long sink;

    private Warmup() {
    }

    /**
     * Runs epochs {@code firstEpoch, firstEpoch + 1, ...} untimed until {@code seconds} have passed (at least one when
     * {@code seconds > 0}), reading a byte of each batch as the timed epochs do.
     *
     * @param loader the loader about to be timed
     * @param firstEpoch the first epoch number to run
     * @param seconds how long to warm up; 0 for none
     * @return the next epoch number
     */
    static long epochs(Loader loader, long firstEpoch, double seconds) {
        if (seconds <= 0) {
            return firstEpoch;
        }
        long[] next = {firstEpoch};
        Measure.warmUp(Duration.ofNanos((long) (seconds * 1e9)), () -> {
            long read = 0;
            for (Batch batch : loader.epoch(next[0]++)) {
                read += touch(batch);
            }
            sink = read;
        });
        return next[0];
    }

    /**
     * What the benches read of a batch so that the JIT cannot drop the copy: its stored values when sparse, else one
     * byte of it.
     *
     * @param batch the batch
     * @return a number that depends on the batch
     */
    static long touch(Batch batch) {
        return batch.isSparse() ? batch.storedValues()
                : batch.data().get(ValueLayout.JAVA_BYTE, batch.number() % batch.data().byteSize());
    }
}
