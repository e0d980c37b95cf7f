package dev.memfit.synthetic;

import dev.memfit.ConfigurationStyleTest;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URISyntaxException;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The core's one configuration style ({@link ConfigurationStyleTest}) for the synthetic data, which moved from the core
 * to memfit-notebook: a public static or constructor takes at most three arguments; more settings make a builder.
 */
class SyntheticConfigurationStyleTest {

    @Test
    void publicStaticsAndConstructorsTakeAtMostThreeArguments() throws IOException, URISyntaxException {
        List<String> positional = ConfigurationStyleTest.positionalCalls(SyntheticAtlas.class, List.of("synthetic"));
        assertTrue(positional.isEmpty(), "make these builders:\n" + String.join("\n", positional));
    }
}
