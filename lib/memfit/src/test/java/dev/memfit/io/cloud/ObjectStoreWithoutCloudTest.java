package dev.memfit.io.cloud;

import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;

import java.net.URI;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The core alone (no memfit-cloud on its class path): a store builds and describes itself; a request says what to add. */
class ObjectStoreWithoutCloudTest {

    @Test
    void aRequestWithoutMemfitCloudSaysToAddIt() {
        try (ObjectStore store = ObjectStore.builder().optEndpoint(URI.create("http://127.0.0.1:9")).optRegion("eu-west-1")
                .optCredentials("id", "do-not-print").build()) {
            assertEquals("s3 (http://127.0.0.1:9, path-style)", store.describe());
            assertEquals(0, store.requests());
            MemfitException e = assertThrows(MemfitException.class, () -> store.head(ObjectUri.parse("s3://lab/cells.npy")));
            assertEquals("s3://lab/cells.npy: reading s3:// and gs:// objects needs memfit-cloud on the class path "
                    + "(dev.memfit:memfit-cloud, lib/cloud: the S3 client); ./memfit and the notebook kernel have it", e.getMessage());
            assertTrue(!store.settings().toString().contains("do-not-print"), "secrets stay out of messages");
        }
    }
}
