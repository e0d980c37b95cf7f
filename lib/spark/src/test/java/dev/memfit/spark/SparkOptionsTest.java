package dev.memfit.spark;

import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The Spark settings are declared once ({@link SparkOptions}) and reach both jobs' checks the same way. */
class SparkOptionsTest {

    @Test
    void bothBuildersTakeTheSameSettingsAndRefuseABlankMasterAlike() {
        SparkShards.Builder shards = SparkShards.builder();
        SparkPreprocess.Builder preprocess = SparkPreprocess.builder();
        assertSame(shards, shards.optMaster("local[2]").addConfig("spark.ui.enabled", "false"), "fluent: the same builder");
        assertSame(preprocess, preprocess.optMaster("local[2]").addConfig("spark.ui.enabled", "false"));
        assertEquals(Map.of("spark.ui.enabled", "false"), shards.sparkSessions().config());
        assertEquals(shards.sparkSessions().config(), preprocess.sparkSessions().config());

        String blank = "optMaster: give a Spark master such as local[2] (or optSession a running session)";
        MemfitException a = assertThrows(MemfitException.class, () -> SparkShards.builder()
                .setInputs(List.of(Path.of("a.h5ad"))).optMaster(" ").write(Path.of("never")));
        MemfitException b = assertThrows(MemfitException.class, () -> SparkPreprocess.builder()
                .setInput(Path.of("a.h5ad")).optMaster(" ").run(Path.of("never.h5ad")));
        assertEquals(blank, a.getMessage());
        assertEquals(blank, b.getMessage());
    }
}
