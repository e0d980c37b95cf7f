package dev.memfit.io.cloud;

import dev.memfit.MemfitException;
import dev.memfit.data.Datasets;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The core alone (no memfit-cloud on its class path): reading a bucket says, in one line, which module to add. */
class ObjectCacheWithoutCloudTest {

    private static final String ADD_MEMFIT_CLOUD = "reading s3:// and gs:// objects needs memfit-cloud on the class "
            + "path (dev.memfit:memfit-cloud, lib/cloud: the object cache and the S3 client); ./memfit and the notebook "
            + "kernel have it";

    @Test
    void theCacheFromTheEnvironmentSaysToAddMemfitCloud() {
        assertEquals(ADD_MEMFIT_CLOUD, assertThrows(MemfitException.class, ObjectCache::fromEnvironment).getMessage());
    }

    @Test
    void aLoaderAndADescriptionOfAnObjectSayTheSame() {
        MemfitException loader = assertThrows(MemfitException.class,
                () -> Datasets.open("s3://lab/cells.npy").optBatchSize(8).build().close());
        assertEquals(ADD_MEMFIT_CLOUD, loader.getMessage());
        assertEquals(ADD_MEMFIT_CLOUD, assertThrows(MemfitException.class,
                () -> Datasets.describe("gs://lab/atlas.h5ad")).getMessage());
    }
}
