package dev.memfit.memory;

import dev.memfit.PythonPeer;
import dev.memfit.data.Batch;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Small files written by numpy and anndata whose rows name themselves: row i of every file is
 * {@code x[i, j] = (i + 1) * 1000 + j}, zero where {@code (i + j) % 3 == 0} except in column 0, over 5 columns.
 */
final class StrategyFiles {

    static final int COLUMNS = 5;
    /** Rows of {@code rows.npy}. */
    static final long ROWS = 2000;
    /** Files of the {@code samples} folder, one row each. */
    static final long SAMPLES = 12;
    /** Cells of {@code cells.h5ad} (CSR). */
    static final long CELLS = 90;

    private StrategyFiles() {
    }

    /**
     * Writes {@code rows.npy}, the folder {@code samples} of one-row {@code .npy} files and {@code cells.h5ad}.
     *
     * @param dir where
     */
    static void write(Path dir) {
        assertEquals("ok", PythonPeer.run("""
                import sys, os, numpy as np, scipy.sparse as sp, anndata as ad
                d = sys.argv[1]
                def rows(n):
                    i = np.arange(n)[:, None]
                    j = np.arange(5)[None, :]
                    x = ((i + 1) * 1000 + j).astype(np.float32)
                    x[((i + j) % 3 == 0) & (j != 0)] = 0
                    return x
                np.save(d + '/rows.npy', rows(2000))
                os.makedirs(d + '/samples')
                x = rows(12)
                for k in range(12):
                    np.save(d + '/samples/s%02d.npy' % k, x[k])
                ad.AnnData(sp.csr_matrix(rows(90))).write_h5ad(d + '/cells.h5ad')
                print('ok')
                """, dir));
    }

    /** The value numpy wrote at row {@code row}, column {@code column}. */
    static float expected(long row, int column) {
        return column == 0 || (row + column) % 3 != 0 ? (row + 1) * 1000f + column : 0f;
    }

    /**
     * Checks every sample of one epoch against the row it should be, and returns the rows in the order seen.
     *
     * @param epoch the batches
     * @param rowOf the file row of a batch index (the identity, or a subset's indices)
     * @return the file rows, in epoch order
     */
    static List<Long> rowsOf(Iterable<Batch> epoch, LongUnaryOperator rowOf) {
        List<Long> seen = new ArrayList<>();
        for (Batch batch : epoch) {
            long[] indices = batch.indices();
            for (int i = 0; i < indices.length; i++) {
                long row = rowOf.applyAsLong(indices[i]);
                for (int j = 0; j < COLUMNS; j++) {
                    float value = batch.data().getAtIndex(ValueLayout.JAVA_FLOAT, (long) i * COLUMNS + j);
                    assertEquals(expected(row, j), value, "row " + row + ", column " + j);
                }
                seen.add(row);
            }
        }
        return seen;
    }

    /**
     * Checks one epoch visits rows 0..n-1 once each, every sample carrying its own row.
     *
     * @param epoch the batches
     * @param rows the rows expected
     */
    static void assertEveryRowOnce(Iterable<Batch> epoch, long rows) {
        List<Long> seen = rowsOf(epoch, index -> index);
        assertEquals(rows, seen.size());
        assertEquals(rows, seen.stream().distinct().count());
        assertEquals(rows - 1, seen.stream().mapToLong(Long::longValue).max().orElse(-1));
    }
}
