package dev.memfit.cloud;

import dev.memfit.io.cloud.ObjectUri;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** A store's settings: from the environment or the builder, described without credentials, nothing sent. */
class ObjectStoreSettingsTest {

    @Test
    void settingsComeFromTheEnvironmentWithoutPrintingCredentials() {
        try (ObjectStore store = ObjectStore.builder().optEnvironment(Map.of("AWS_ENDPOINT_URL", "http://127.0.0.1:9",
                "AWS_REGION", "eu-west-1", "AWS_SECRET_ACCESS_KEY", "hidden-secret")).build()) {
            assertEquals("http://127.0.0.1:9", store.endpointOf(ObjectUri.parse("s3://b/k")));
            assertEquals("https://storage.googleapis.com", store.endpointOf(ObjectUri.parse("gs://b/k")));
            assertEquals("s3 (http://127.0.0.1:9, path-style)", store.describe());
            assertFalse(store.describe().contains("hidden"));
        }
        try (ObjectStore aws = ObjectStore.builder().optEnvironment(Map.of()).build()) {
            assertEquals("aws:us-east-1", aws.endpointOf(ObjectUri.parse("s3://b/k")));
        }
    }

    @Test
    void aBuiltStoreDescribesItselfAndSendsNothing() {
        try (ObjectStore store = ObjectStore.builder().optEndpoint(URI.create("http://127.0.0.1:9")).optRegion("eu-west-1")
                .optCredentials("id", "do-not-print").build()) {
            assertEquals("s3 (http://127.0.0.1:9, path-style)", store.describe());
            assertEquals(0, store.requests());
            assertFalse(store.settings().toString().contains("do-not-print"), "secrets stay out of messages");
        }
    }
}
