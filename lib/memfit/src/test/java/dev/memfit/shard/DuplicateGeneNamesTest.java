package dev.memfit.shard;

import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * anndata writes a file whose var names repeat (it only warns; real files from merged annotations have them): shards
 * map genes by name, so such a file is refused naming the file, the gene and the fix, with or without a vocabulary
 * (a vocabulary would otherwise map both columns onto one gene and sum them).
 */
class DuplicateGeneNamesTest {

    @TempDir
    static Path dir;
    static Path file;

    @BeforeAll
    static void write() {
        file = dir.resolve("repeated-genes.h5ad");
        PythonPeer.run("""
                import sys, warnings, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                warnings.simplefilter('ignore')
                x = sp.csr_matrix(np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32))
                ad.AnnData(x, obs=pd.DataFrame(index=['c0', 'c1']),
                           var=pd.DataFrame(index=['g0', 'g1', 'g1', 'g3'])).write_h5ad(sys.argv[1])
                """, file);
    }

    @Test
    void refusedNamingTheFileTheGeneAndTheFix() {
        for (GeneVocabulary vocabulary : new GeneVocabulary[] {null, new GeneVocabulary(List.of("g0", "g1", "g3"))}) {
            Path out = dir.resolve("shards-" + (vocabulary == null ? "own" : "vocab"));
            var builder = ShardWriter.builder().setInput(file).optShardSize(2);
            if (vocabulary != null) {
                builder.optVocabulary(vocabulary);
            }
            MemfitException refused = assertThrows(MemfitException.class, () -> builder.write(out));
            String message = refused.getMessage();
            assertTrue(message.startsWith(file.toString()), message);
            assertTrue(message.contains("'g1' at positions 1 and 2"), message);
            assertTrue(message.contains("var_names_make_unique()"), message);
            assertFalse(Files.exists(out.resolve("shard_000000.data.npy")), "nothing is written");
        }
    }
}
