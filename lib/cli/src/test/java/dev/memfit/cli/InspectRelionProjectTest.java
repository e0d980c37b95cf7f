package dev.memfit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.io.mrc.RelionProject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code memfit inspect} on the STAR files of a project RELION itself ran, where RELION writes them. */
class InspectRelionProjectTest {

    @TempDir
    static Path dir;

    private static RelionProject project;

    @BeforeAll
    static void runRelion() throws Exception {
        project = RelionProject.make(dir.resolve("project"));
    }

    @Test
    void everyJobFolderStarInspectsWithTheSumMrcfileGives() throws Exception {
        for (String star : RelionProject.PARTICLE_STARS) {
            CliRun run = CliRun.of("inspect", project.root().resolve(star).toString(), "--json");
            assertEquals(0, run.status(), star + ": " + run.err());
            JsonNode facts = new ObjectMapper().readTree(run.out());
            double[] reference = project.referenceSums(star);
            assertEquals(reference.length, facts.get("images").asLong(), star);
            assertEquals(Arrays.stream(reference).sum(), facts.get("sum").asDouble(), 1e-6 * reference.length, star);
            assertTrue(facts.get("stacks_under").asText().startsWith(project.root().toAbsolutePath().normalize() + " ("),
                    facts.toString());
        }
    }

    @Test
    void aMovedStarInspectsWithDatadirAndFailsInOneLineWithout() throws Exception {
        Path moved = Files.createDirectories(dir.resolve("copies")).resolve("run_it002_data.star");
        Files.copy(project.root().resolve("Class2D/job007/run_it002_data.star"), moved);
        CliRun failed = CliRun.of("inspect", moved.toString());
        assertEquals(1, failed.status());
        assertEquals(1, failed.err().strip().lines().count(), failed.err());
        assertTrue(failed.err().contains(moved + " line ") && failed.err().contains("--datadir"), failed.err());

        CliRun run = CliRun.of("inspect", moved.toString(), "--datadir", project.root().toString());
        assertEquals(0, run.status(), run.err());
        assertTrue(run.out().contains("stacks under   " + project.root().toAbsolutePath().normalize() + " (the data folder given)"),
                run.out());
    }
}
