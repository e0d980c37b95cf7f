package dev.memfit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ParamsTest {

    @AfterEach
    void clear() {
        System.clearProperty("memfit.small");
        System.clearProperty("memfit.rows");
    }

    @Test
    void propertyBeatsDefaultsAndSmallPicksTheSecondDefault() {
        assertEquals(200_000, Params.size("rows", 200_000, 2_000));
        System.setProperty("memfit.small", "1");
        assertEquals(2_000, Params.size("rows", 200_000, 2_000));
        System.setProperty("memfit.rows", "12_345");
        assertEquals(12_345, Params.size("rows", 200_000, 2_000));
    }

    @Test
    void badNumberSaysWhichParameter() {
        System.setProperty("memfit.rows", "lots");
        MemfitException e = assertThrows(MemfitException.class, () -> Params.size("rows", 1, 1));
        assertTrue(e.getMessage().contains("parameter rows") && e.getMessage().contains("'lots'"), e.getMessage());
    }
}
