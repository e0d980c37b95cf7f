package dev.memfit.io.cloud;

import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ObjectUriTest {

    @Test
    void parsesBothSchemesAndThePathForm() {
        ObjectUri s3 = ObjectUri.parse("s3://atlas/cells/x.npy");
        assertEquals(new ObjectUri("s3", "atlas", "cells/x.npy"), s3);
        assertEquals("s3://atlas/cells/x.npy", s3.toString());
        assertEquals(Path.of("s3:/atlas/cells/x.npy"), s3.toPath());
        assertEquals(s3, ObjectUri.of(s3.toPath()), "the path form folds // to /; it parses back to the same object");
        assertEquals(new ObjectUri("gs", "b", "k"), ObjectUri.parse("GS://b/k"));
        assertEquals(new ObjectUri("s3", "bucket", ""), ObjectUri.parse("s3://bucket"));
        assertEquals(ObjectUri.parse("s3://b/data/x.npy"), ObjectUri.parse("s3://b/data").resolve("x.npy"));
        assertTrue(ObjectUri.isObject("s3://b/k"));
        assertFalse(ObjectUri.isObject("/data/s3/x.npy"));
    }

    @Test
    void refusesWhatIsNotAnObject() {
        assertTrue(assertThrows(MemfitException.class, () -> ObjectUri.parse("/tmp/x.npy")).getMessage()
                .contains("s3://bucket/key"));
        assertThrows(MemfitException.class, () -> ObjectUri.parse("s3:///key"));
        assertThrows(MemfitException.class, () -> new ObjectUri("az", "b", "k"));
    }
}
