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
        System.clearProperty("memfit.size");
    }

    @Test
    void theSizeTierPicksItsDefaultAndSmallIsTheOlderSpelling() {
        assertEquals(Params.Tier.DEFAULT, Params.tier());
        assertEquals(60_000, Params.tiered("rows", 4_000, 60_000, 600_000));
        System.setProperty("memfit.size", "large");
        assertEquals(600_000, Params.tiered("rows", 4_000, 60_000, 600_000));
        assertEquals(200_000, Params.size("rows", 200_000, 2_000), "two-default parameters use the default at large");
        System.setProperty("memfit.size", "Small");
        assertEquals(4_000, Params.tieredInt("rows", 4_000, 60_000, 600_000));
        assertTrue(Params.small());
        System.clearProperty("memfit.size");
        System.setProperty("memfit.small", "true");
        assertEquals(Params.Tier.SMALL, Params.tier());
        System.setProperty("memfit.size", "huge");
        MemfitException e = assertThrows(MemfitException.class, Params::tier);
        assertTrue(e.getMessage().contains("small, default or large") && e.getMessage().contains("'huge'"), e.getMessage());
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
