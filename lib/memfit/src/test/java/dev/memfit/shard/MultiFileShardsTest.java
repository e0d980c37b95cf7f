package dev.memfit.shard;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Several {@code .h5ad} files into one shard set: shards restart at each file, the metadata lists every source, and a
 * second run resumes only when the sources (and their order) are the same.
 */
class MultiFileShardsTest {

    @TempDir
    Path dir;

    @Test
    void shardsRestartAtEachFileAndARunResumesOnlyTheSameSources() throws IOException {
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(5)
                for i, n in enumerate([25, 12]):
                    x = ((rng.random((n, 8)) < 0.3) * rng.integers(1, 9, (n, 8))).astype(np.float32)
                    ad.AnnData(sp.csr_matrix(x), obs=pd.DataFrame(index=['f%d_%d' % (i, k) for k in range(n)]),
                               var=pd.DataFrame(index=['g%d' % j for j in range(8)])).write_h5ad('%s/part-%d.h5ad' % (sys.argv[1], i))
                print('ok')
                """, dir));
        List<Path> inputs = List.of(dir.resolve("part-0.h5ad"), dir.resolve("part-1.h5ad"));
        Path out = dir.resolve("shards");
        ShardWriter.Result first = ShardWriter.builder().setInputs(inputs).optShardSize(10)
                .optProgress(ProgressListener.silent()).write(out);
        assertEquals(5, first.shards());   // 25 -> 10, 10, 5; 12 -> 10, 2
        try (ShardStore store = ShardStore.open(out)) {
            assertArrayEquals(new long[]{10, 10, 5, 10, 2}, store.shardSizes());
        }
        JsonNode metadata = ShardWriter.JSON.readTree(out.resolve(ShardWriter.METADATA).toFile());
        assertEquals(inputs.get(1).toAbsolutePath().toString(), metadata.path("sources").get(1).path("file").asText());
        assertEquals(12, metadata.path("sources").get(1).path("cells").asLong());
        assertEquals(37, metadata.path("cells").asLong());

        ShardWriter.Result again = ShardWriter.builder().setInputs(inputs).optShardSize(10)
                .optProgress(ProgressListener.silent()).write(out);
        assertEquals(0, again.written(), "the same sources resume: nothing to write");
        ShardWriter.Result swapped = ShardWriter.builder().setInputs(inputs.reversed()).optShardSize(10)
                .optProgress(ProgressListener.silent()).write(out);
        assertEquals(5, swapped.written(), "other sources (the order counts) are another conversion");
        ShardStore.validate(out);
        try (ShardStore store = ShardStore.open(out)) {
            assertArrayEquals(new long[]{10, 2, 10, 10, 5}, store.shardSizes());
        }
    }
}
