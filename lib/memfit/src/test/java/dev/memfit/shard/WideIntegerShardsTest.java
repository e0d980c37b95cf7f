package dev.memfit.shard;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.PythonPeer;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An integer X (anndata's int64 and int32, sparse and dense) holds values float32 cannot all hold: float32 shards of
 * such a file are refused where a value would be rounded (never written rounded with exit 0), and float64 shards
 * keep it exactly; counts below 2^24 stay float32 and exact.
 */
class WideIntegerShardsTest {

    @TempDir
    static Path dir;
    static Path sparseBig;
    static Path denseBig;
    static Path counts;

    @BeforeAll
    static void files() {
        sparseBig = dir.resolve("int64-csr.h5ad");
        denseBig = dir.resolve("int32-dense.h5ad");
        counts = dir.resolve("int64-counts.h5ad");
        PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                sparse_big, dense_big, counts = sys.argv[1:4]
                obs = pd.DataFrame(index=['c0', 'c1', 'c2'])
                var = pd.DataFrame(index=['g0', 'g1', 'g2', 'g3'])
                x = np.array([[1, 0, 2, 0], [0, 5, 0, 16777217], [3, 0, 0, 4]], np.int64)
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=var, dtype=np.int64).write_h5ad(sparse_big)
                ad.AnnData(x.astype(np.int32), obs=obs, var=var, dtype=np.int32).write_h5ad(dense_big)
                y = x.copy(); y[1, 3] = 16777215           # the largest odd integer float32 holds
                ad.AnnData(sp.csr_matrix(y), obs=obs, var=var, dtype=np.int64).write_h5ad(counts)
                """, sparseBig, denseBig, counts);
    }

    @Test
    void float32ShardsOfAValueFloat32WouldRoundAreRefusedNamingTheCellAndGene() {
        for (Path input : new Path[] {sparseBig, denseBig}) {
            for (ShardLayout layout : ShardLayout.values()) {
                Path out = dir.resolve("refused-" + input.getFileName() + "-" + layout);
                InvalidFileException refused = assertThrows(InvalidFileException.class, () -> ShardWriter.builder()
                        .setInput(input).optShardSize(2).optLayout(layout).write(out));
                String message = refused.getMessage();
                assertTrue(message.contains(input.getFileName().toString()), message);
                assertTrue(message.contains("cell 1 ('c1')") && message.contains("gene 'g3'"), message);
                assertTrue(message.contains("--dtype float64"), message);
                // the first shard (cells 0-1) holds the value: nothing is listed as written
                assertFalse(Files.exists(out.resolve("shard_000000.npy")) || Files.exists(out.resolve("shard_000000.data.npy")),
                        "a shard with a rounded value was left under its final name");
            }
        }
    }

    @Test
    void float64ShardsKeepTheValueExactly() {
        Path out = dir.resolve("float64");
        ShardWriter.Result result = ShardWriter.builder().setInput(sparseBig).optShardSize(2).optDType(DType.FLOAT64).write(out);
        assertEquals(DType.FLOAT64, result.dtype());
        try (NpyArray data = Npy.map(out.resolve("shard_000000.data.npy"))) {
            // cell 0: 1, 2; cell 1: 5, 16777217
            assertEquals(16777217.0, data.data().get(ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN),
                    3L * Double.BYTES));
        }
    }

    @Test
    void countsBelow2To24StayFloat32AndExact() {
        Path out = dir.resolve("counts");
        ShardWriter.Result result = ShardWriter.builder().setInput(counts).optShardSize(2).write(out);
        assertEquals(DType.FLOAT32, result.dtype());
        try (NpyArray data = Npy.map(out.resolve("shard_000000.data.npy"))) {
            assertEquals(16777215f, data.data().get(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN),
                    3L * Float.BYTES));
        }
    }
}
