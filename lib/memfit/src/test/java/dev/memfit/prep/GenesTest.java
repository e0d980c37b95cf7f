package dev.memfit.prep;

import dev.memfit.shard.GeneVocabulary;
import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GenesTest {

    /** 3 cells x 6 genes: gene g has total 3*g except gene 2, which is never expressed. */
    private static MemorySegment batch() {
        float[] values = new float[18];
        for (int c = 0; c < 3; c++) {
            for (int g = 0; g < 6; g++) {
                values[c * 6 + g] = g == 2 ? 0 : g;
            }
        }
        return MemorySegment.ofArray(values);
    }

    @Test
    void vocabularyMapsInputsConsistently(@TempDir Path dir) {
        GeneVocabulary vocabulary = new GeneVocabulary(List.of("CD3E", "MS4A1", "NKG7", "LYZ"));
        int[] positions = vocabulary.positionsOf(new String[]{"LYZ", "GAPDH", "CD3E"});
        assertArrayEquals(new int[]{3, -1, 0}, positions);
        MemorySegment rows = MemorySegment.ofArray(new float[]{5, 7, 9, 1, 2, 3});
        MemorySegment projected = MemorySegment.ofArray(new float[8]);
        vocabulary.project(rows, 2, positions, projected);
        assertArrayEquals(new float[]{9, 0, 0, 5, 3, 0, 0, 1}, projected.toArray(ValueLayout.JAVA_FLOAT));
        Path file = dir.resolve("vocab.json");
        vocabulary.write(file);
        assertEquals(vocabulary, GeneVocabulary.read(file));
        assertThrows(MemfitException.class, () -> new GeneVocabulary(List.of("A", "A")));
    }

    @Test
    void mostExpressedAndRandomExpressed() {
        GeneSelection most = new GeneSelection(GeneSelection.Mode.MOST_EXPRESSED, 2, 0);
        GeneSelection.Selection top = most.select(batch(), 3, 6, 0);
        assertArrayEquals(new int[]{4, 5}, top.genes());
        assertEquals(18, top.tokensBefore());
        assertEquals(6, top.tokensAfter());
        assertEquals(1 / 3.0, top.keptShare(), 1e-12);
        MemorySegment gathered = MemorySegment.ofArray(new float[6]);
        top.gather(batch(), gathered);
        assertArrayEquals(new float[]{4, 5, 4, 5, 4, 5}, gathered.toArray(ValueLayout.JAVA_FLOAT));

        GeneSelection random = new GeneSelection(GeneSelection.Mode.RANDOM_EXPRESSED, 3, 7);
        for (long b = 0; b < 20; b++) {
            int[] genes = random.select(batch(), 3, 6, b).genes();
            assertEquals(3, genes.length);
            for (int g : genes) {
                assertTrue(g != 0 && g != 2, "only expressed genes: " + g);
            }
        }
        assertArrayEquals(random.select(batch(), 3, 6, 4).genes(), random.select(batch(), 3, 6, 4).genes());
        assertEquals(4, new GeneSelection(GeneSelection.Mode.RANDOM_EXPRESSED, 10, 1).select(batch(), 3, 6, 0).genes().length,
                "k above the expressed genes keeps all four expressed ones");
        assertEquals(6, new GeneSelection(GeneSelection.Mode.ALL, 0, 0).select(batch(), 3, 6, 0).genes().length);
    }
}
