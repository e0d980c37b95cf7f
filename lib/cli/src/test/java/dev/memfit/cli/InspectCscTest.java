package dev.memfit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code memfit inspect} of an .h5ad whose X anndata stored as CSC. */
class InspectCscTest {

    @Test
    void namesTheLayoutAndSumsLikeNumpy(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("csc.h5ad");
        String numpy = PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(4)
                x = ((rng.random((90, 25)) < 0.2) * rng.integers(1, 9, (90, 25))).astype(np.float32)
                ad.AnnData(sp.csc_matrix(x)).write_h5ad(sys.argv[1], compression='gzip')
                print(int((x != 0).sum()), repr(float(x.sum(dtype=np.float64))))
                """, file);
        String[] expected = numpy.strip().split(" ");
        PrintStream oldOut = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status;
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            status = Main.execute("inspect", file.toString(), "--json");
        } finally {
            System.setOut(oldOut);
        }
        assertEquals(0, status);
        JsonNode json = new ObjectMapper().readTree(out.toString(StandardCharsets.UTF_8));
        assertEquals("CSC", json.get("x_layout").asText());
        assertEquals(String.format("AnnData .h5ad, X CSC (transposed to CSR when rows are first read, %,d stored values)",
                Long.parseLong(expected[0])), json.get("format").asText());
        assertEquals(Long.parseLong(expected[0]), json.get("nnz").asLong());
        assertEquals(Double.parseDouble(expected[1]), json.get("sum").asDouble(), 0.0);
        assertTrue(json.get("n_obs").asLong() == 90 && json.get("n_vars").asLong() == 25, json.toString());
    }
}
