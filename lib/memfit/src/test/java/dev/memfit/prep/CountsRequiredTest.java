package dev.memfit.prep;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Preprocess normalizes counts: a NaN, an infinity or a negative value is refused by name, never a silent zero row. */
class CountsRequiredTest {

    @TempDir
    Path dir;

    /** anndata's write_h5ad of 20 cells x 6 genes of counts, X sparse or dense, with one value replaced. */
    private Path counts(String name, boolean sparse, int cell, int gene, String value) {
        Path file = dir.resolve(name);
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(4)
                x = rng.integers(1, 9, (20, 6)).astype(np.float32)
                x[int(sys.argv[3]), int(sys.argv[4])] = float(sys.argv[5])
                obs = pd.DataFrame(index=['cell%d' % i for i in range(20)])
                var = pd.DataFrame(index=['gene%d' % j for j in range(6)])
                ad.AnnData(sp.csr_matrix(x) if sys.argv[2] == 'sparse' else x, obs=obs, var=var).write_h5ad(sys.argv[1])
                print('ok')
                """, file, sparse ? "sparse" : "dense", cell, gene, value));
        return file;
    }

    @Test
    void nanInfinityAndNegativeCountsAreRefusedNamingTheCell() throws IOException {
        record Case(Path file, String found) {
        }
        List<Case> cases = List.of(
                new Case(counts("nan.h5ad", true, 3, 4, "nan"), "NaN in cell 3 ('cell3'), gene 4 ('gene4')"),
                // a negative value among positive ones: the cell's total stays positive
                new Case(counts("negative.h5ad", false, 11, 2, "-2"), "-2.0 in cell 11 ('cell11'), gene 2 ('gene2')"),
                new Case(counts("infinite.h5ad", false, 19, 5, "inf"), "Infinity in cell 19 ('cell19'), gene 5 ('gene5')"));
        for (Case c : cases) {
            Path output = dir.resolve("out-" + c.file().getFileName());
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> Preprocess.builder()
                    .setInput(c.file()).optHighlyVariable(3).optProgress(ProgressListener.silent()).run(output));
            assertTrue(e.getMessage().startsWith(c.file() + ": expected raw counts in X (finite and not negative)"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("found " + c.found()), e.getMessage());
            assertEquals(c.file(), e.file());
            assertThrows(InvalidFileException.class, () -> Preprocess.builder().setInput(c.file())
                    .optProgress(ProgressListener.silent()).statistics(), "pass one alone refuses it too");
        }
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(List.of("infinite.h5ad", "nan.h5ad", "negative.h5ad"),
                    left.map(p -> p.getFileName().toString()).sorted().toList(), "no output, no temporary file");
        }
    }

    @Test
    void aTargetSumThatIsNotAFiniteNumberIsRefused() {
        Path raw = counts("raw.h5ad", true, 0, 0, "1");
        for (double target : new double[]{Double.POSITIVE_INFINITY, Double.NaN, -1, 0}) {
            MemfitException e = assertThrows(MemfitException.class, () -> Preprocess.builder().setInput(raw)
                    .optTargetSum(target).optProgress(ProgressListener.silent()).run(dir.resolve("never.h5ad")));
            assertEquals("optTargetSum(counts) needs a positive, finite sum such as 10000 (--target-sum on the command "
                    + "line), got " + target, e.getMessage());
        }
        assertTrue(Files.notExists(dir.resolve("never.h5ad")));
    }
}
