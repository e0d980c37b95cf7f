package dev.memfit.prep;

import dev.memfit.ProgressListener;
import dev.memfit.RecordingProgress;
import dev.memfit.source.ArraySource;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FeatureCacheTest {

    /** Features of item i: (sum of its row, i). Counts the items it has processed. */
    private static final class Sums implements FeatureCache.Extractor {
        final AtomicInteger computed = new AtomicInteger();
        final int failAfter;

        Sums(int failAfter) {
            this.failAfter = failAfter;
        }

        @Override
        public long[] featureShape() {
            return new long[]{2};
        }

        @Override
        public void extract(Batch items, MemorySegment features) {
            float[] values = items.toFloatArray();
            long[] indices = items.indices();
            int width = values.length / items.size();
            for (int i = 0; i < items.size(); i++) {
                if (computed.incrementAndGet() > failAfter) {
                    throw new IllegalStateException("simulated crash while building");
                }
                float sum = 0;
                for (int j = 0; j < width; j++) {
                    sum += values[i * width + j];
                }
                features.setAtIndex(ValueLayout.JAVA_FLOAT, 2L * i, sum);
                features.setAtIndex(ValueLayout.JAVA_FLOAT, 2L * i + 1, indices[i]);
            }
        }
    }

    private static ArraySource items() {
        float[][] rows = new float[50][4];
        for (int i = 0; i < 50; i++) {
            rows[i] = new float[]{i, 1, 2, 3};
        }
        return ArraySource.of("items", rows);
    }

    private static FeatureCache.Builder sums(Path dir, Map<String, ?> parameters, Loader loader, Sums extractor) {
        return FeatureCache.builder().setDirectory(dir).setName("sums").setParameters(parameters).setItems(loader)
                .setExtractor(extractor).optProgress(ProgressListener.silent());
    }

    private static FeatureCache.Result get(Path dir, ArraySource source, Map<String, ?> parameters, Sums extractor) {
        try (Loader loader = Datasets.of(source).optBatchSize(8).optShuffle(1).build()) {
            return sums(dir, parameters, loader, extractor).getOrBuild();
        }
    }

    @Test
    void buildsOnceThenHitsWithTheRightRows(@TempDir Path dir) {
        try (ArraySource source = items()) {
            Sums first = new Sums(Integer.MAX_VALUE);
            FeatureCache.Result built = get(dir, source, Map.of("model", "sum", "version", 1), first);
            assertEquals(FeatureCache.Status.BUILT, built.status());
            assertEquals(50, first.computed.get());
            Sums second = new Sums(Integer.MAX_VALUE);
            FeatureCache.Result hit = get(dir, source, Map.of("version", 1, "model", "sum"), second);
            assertEquals(FeatureCache.Status.HIT, hit.status(), hit.reason());
            assertEquals(0, second.computed.get(), "a hit computes nothing");
            try (NpyArray features = Npy.map(hit.features())) {
                assertEquals(17 + 6, features.getDouble(17, 0), 0.0, "row 17 holds item 17's features, whatever the batch order");
                assertEquals(17, features.getDouble(17, 1), 0.0);
            }
        }
    }

    @Test
    void changedParametersInvalidate(@TempDir Path dir) {
        try (ArraySource source = items()) {
            get(dir, source, Map.of("model", "sum", "version", 1), new Sums(Integer.MAX_VALUE));
            FeatureCache.Result result = get(dir, source, Map.of("model", "sum", "version", 2), new Sums(Integer.MAX_VALUE));
            assertEquals(FeatureCache.Status.REBUILT, result.status());
            assertTrue(result.reason().startsWith("the parameters changed"), result.reason());
        }
    }

    @Test
    void otherItemsOfTheSameShapeInvalidate(@TempDir Path dir) {
        float[][] other = new float[50][4];
        for (int i = 0; i < 50; i++) {
            other[i] = new float[]{i, 1, 2, 4};   // the same name, count and shape; other values
        }
        try (ArraySource source = items(); ArraySource changed = ArraySource.of("items", other)) {
            get(dir, source, Map.of("v", 1), new Sums(Integer.MAX_VALUE));
            FeatureCache.Result result = get(dir, changed, Map.of("v", 1), new Sums(Integer.MAX_VALUE));
            assertEquals(FeatureCache.Status.REBUILT, result.status(), "stale features of other items were served");
            assertTrue(result.reason().startsWith("the items changed"), result.reason());
            try (NpyArray features = Npy.map(result.features())) {
                assertEquals(17 + 7, features.getDouble(17, 0), 0.0, "the new items' features");
            }
        }
    }

    @Test
    void bitFlipIsDetectedAndRebuilt(@TempDir Path dir) throws IOException {
        try (ArraySource source = items()) {
            FeatureCache.Result built = get(dir, source, Map.of("v", 1), new Sums(Integer.MAX_VALUE));
            try (RandomAccessFile file = new RandomAccessFile(built.features().toFile(), "rw")) {
                long at = file.length() - 37;
                file.seek(at);
                int b = file.read();
                file.seek(at);
                file.write(b ^ 0x10);
            }
            FeatureCache.Result result = get(dir, source, Map.of("v", 1), new Sums(Integer.MAX_VALUE));
            assertEquals(FeatureCache.Status.REBUILT, result.status());
            assertTrue(result.reason().contains("is corrupt: CRC32C"), result.reason());
            assertEquals(FeatureCache.Status.HIT, get(dir, source, Map.of("v", 1), new Sums(0)).status());
        }
    }

    @Test
    void truncatedDataAndBrokenManifestAreRebuilt(@TempDir Path dir) throws IOException {
        try (ArraySource source = items()) {
            FeatureCache.Result built = get(dir, source, Map.of("v", 1), new Sums(Integer.MAX_VALUE));
            byte[] bytes = Files.readAllBytes(built.features());
            Files.write(built.features(), java.util.Arrays.copyOf(bytes, bytes.length - 100));
            FeatureCache.Result truncated = get(dir, source, Map.of("v", 1), new Sums(Integer.MAX_VALUE));
            assertEquals(FeatureCache.Status.REBUILT, truncated.status());
            assertTrue(truncated.reason().contains("is damaged") && truncated.reason().contains("truncated"), truncated.reason());

            Files.writeString(dir.resolve("sums.manifest.json"), "{\"parameters_sha256\": ");
            FeatureCache.Result garbled = get(dir, source, Map.of("v", 1), new Sums(Integer.MAX_VALUE));
            assertEquals(FeatureCache.Status.REBUILT, garbled.status());
            assertTrue(garbled.reason().contains("does not parse"), garbled.reason());
        }
    }

    @Test
    void interruptedBuildNeverReadsAsValid(@TempDir Path dir) {
        try (ArraySource source = items()) {
            get(dir, source, Map.of("v", 1), new Sums(Integer.MAX_VALUE));
            assertThrows(IllegalStateException.class, () -> get(dir, source, Map.of("v", 2), new Sums(20)));
            assertFalse(Files.exists(dir.resolve("sums.manifest.json")), "no manifest after a crash");
            String why;
            try (Loader loader = Datasets.of(source).optBatchSize(8).build()) {
                why = sums(dir, Map.of("v", 1), loader, new Sums(0)).validate();
            }
            assertTrue(why != null && why.startsWith("no cache yet"), String.valueOf(why));
            FeatureCache.Result recovered = get(dir, source, Map.of("v", 2), new Sums(Integer.MAX_VALUE));
            assertEquals(FeatureCache.Status.REBUILT, recovered.status());
            assertEquals(FeatureCache.Status.HIT, get(dir, source, Map.of("v", 2), new Sums(0)).status());
        }
    }

    @Test
    void randomEmbedderIsDeterministicAndCacheable(@TempDir Path dir) {
        try (ArraySource source = items();
             RandomEmbedder embedder = RandomEmbedder.builder().setInputSize(4).setDimension(6).optHidden(32).optDepth(2)
                     .optSeed(9).build();
             Loader loader = Datasets.of(source).optBatchSize(16).build()) {
            FeatureCache.Builder cache = FeatureCache.builder().setDirectory(dir).setName("embed")
                    .setParameters(embedder.parameters()).setItems(loader).setExtractor(embedder);
            FeatureCache.Result built = cache.getOrBuild();
            FeatureCache.Result hit = cache.getOrBuild();
            assertEquals(FeatureCache.Status.BUILT, built.status());
            assertEquals(FeatureCache.Status.HIT, hit.status());
            try (RandomEmbedder again = RandomEmbedder.builder().setInputSize(4).setDimension(6).optHidden(32).optDepth(2)
                         .optSeed(9).build();
                 Loader other = Datasets.of(source).optBatchSize(5).build();
                 NpyArray features = Npy.map(hit.features())) {
                assertEquals(null, FeatureCache.builder().setDirectory(dir).setName("embed").setParameters(again.parameters())
                        .setItems(other).setExtractor(again).validate(), "a new embedder of the same settings finds the cache valid");
                Batch first = other.epoch(0).iterator().next();
                MemorySegment out = MemorySegment.ofArray(new float[5 * 6]);
                again.extract(first, out);
                assertEquals(features.getDouble(3, 4), out.getAtIndex(ValueLayout.JAVA_FLOAT, 3 * 6 + 4), 1e-6);
                assertTrue(Math.abs(features.getDouble(3, 4)) <= 1.0, "tanh output");
            }
        }
    }

    @Test
    void buildsReportBatchesToTheListenerAndHitsReportNothing(@TempDir Path dir) {
        try (ArraySource source = items(); Loader loader = Datasets.of(source).optBatchSize(8).build()) {
            RecordingProgress building = new RecordingProgress();
            sums(dir, Map.of("v", 1), loader, new Sums(Integer.MAX_VALUE)).optProgress(building).getOrBuild();
            RecordingProgress.Seen task = building.only();
            assertEquals("Features sums", task.name());
            assertEquals(7, task.total(), "50 items in batches of 8");
            assertEquals("batches", task.unit());
            assertEquals(7, task.steps().get());
            assertTrue(task.closed().get());
            RecordingProgress hitting = new RecordingProgress();
            assertEquals(FeatureCache.Status.HIT,
                    sums(dir, Map.of("v", 1), loader, new Sums(0)).optProgress(hitting).getOrBuild().status());
            assertEquals(List.of(), hitting.tasks(), "a hit computes nothing and reports nothing");
        }
    }

    @Test
    void theBuilderSaysWhatIsMissing(@TempDir Path dir) {
        try (ArraySource source = items(); Loader loader = Datasets.of(source).optBatchSize(8).build()) {
            Sums extractor = new Sums(0);
            assertMessage("setDirectory(folder) is required", () -> FeatureCache.builder().setName("a")
                    .setParameters(Map.of()).setItems(loader).setExtractor(extractor).getOrBuild());
            assertMessage("setName(stem) is required", () -> FeatureCache.builder().setDirectory(dir)
                    .setParameters(Map.of()).setItems(loader).setExtractor(extractor).getOrBuild());
            assertMessage("a file name without a folder", () -> FeatureCache.builder().setDirectory(dir).setName("a/b")
                    .setParameters(Map.of()).setItems(loader).setExtractor(extractor).validate());
            assertMessage("setParameters(map) is required", () -> FeatureCache.builder().setDirectory(dir).setName("a")
                    .setItems(loader).setExtractor(extractor).getOrBuild());
            assertMessage("setItems(loader) is required", () -> FeatureCache.builder().setDirectory(dir).setName("a")
                    .setParameters(Map.of()).setExtractor(extractor).getOrBuild());
            assertMessage("setExtractor(extractor) is required", () -> FeatureCache.builder().setDirectory(dir).setName("a")
                    .setParameters(Map.of()).setItems(loader).getOrBuild());
            assertEquals(0, extractor.computed.get());
            assertFalse(Files.exists(dir.resolve("a.npy")), "nothing built before the settings are valid");
            assertMessage("setInputSize(values) is required", () -> RandomEmbedder.builder().setDimension(4).build());
            assertMessage("setDimension(features) is required", () -> RandomEmbedder.builder().setInputSize(4).build());
            assertMessage("optDepth at least 0 layers", () -> RandomEmbedder.builder().setInputSize(4).setDimension(2)
                    .optDepth(-1).build());
        }
    }

    private static void assertMessage(String expected, org.junit.jupiter.api.function.Executable call) {
        dev.memfit.MemfitException e = assertThrows(dev.memfit.MemfitException.class, call);
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }
}
