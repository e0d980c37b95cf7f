package dev.memfit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.PythonPeer;
import dev.memfit.io.mrc.CsProject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code memfit inspect} on the {@code .cs} files of a project laid out as cryoSPARC lays one out ({@link CsProject}):
 * the particle count and the float64 sum of every image equal mrcfile's; a {@code .cs} moved out of its project needs
 * {@code --datadir}; a plain {@code .npy} is still inspected as one.
 */
class InspectCryoSparcProjectTest {

    @TempDir
    static Path dir;

    private static CsProject project;

    @BeforeAll
    static void writeProject() throws Exception {
        project = CsProject.make(dir.resolve("project"));
    }

    @Test
    void everyCsInspectsWithTheSumMrcfileGives() throws Exception {
        for (String cs : CsProject.PARTICLE_FILES) {
            CliRun run = CliRun.of("inspect", project.root().resolve(cs).toString(), "--json");
            assertEquals(0, run.status(), cs + ": " + run.err());
            JsonNode facts = new ObjectMapper().readTree(run.out());
            double[] reference = project.referenceSums(cs);
            assertEquals(reference.length, facts.get("images").asLong(), cs);
            assertEquals(Arrays.stream(reference).sum(), facts.get("sum").asDouble(), 1e-6 * reference.length, cs);
            assertTrue(facts.get("format").asText().startsWith("cryoSPARC .cs, "), facts.toString());
            assertEquals("[" + CsProject.SIDE + "," + CsProject.SIDE + "]", facts.get("image_shape").toString());
            assertTrue(facts.get("stacks_under").asText().startsWith(project.root().toAbsolutePath().normalize() + "/P1"),
                    facts.toString());
        }
    }

    @Test
    void aMovedCsInspectsWithDatadirAndFailsInOneLineWithout() throws Exception {
        Path moved = Files.createDirectories(dir.resolve("copies")).resolve("J5_particles.cs");
        Files.copy(project.root().resolve("P1/J5/J5_particles.cs"), moved);
        Files.copy(project.root().resolve("P1/J5/J5_passthrough_particles.cs"), moved.resolveSibling("J5_passthrough_particles.cs"));
        CliRun failed = CliRun.of("inspect", moved.toString());
        assertEquals(1, failed.status());
        assertEquals(1, failed.err().strip().lines().count(), failed.err());
        assertTrue(failed.err().contains(moved.resolveSibling("J5_passthrough_particles.cs") + " row 0: expected an existing "
                + "stack '") && failed.err().contains("--datadir"), failed.err());

        Path p1 = project.root().resolve("P1").toAbsolutePath().normalize();
        CliRun run = CliRun.of("inspect", moved.toString(), "--datadir", p1.toString());
        assertEquals(0, run.status(), run.err());
        assertTrue(run.out().contains("stacks under   " + p1 + " (the data folder given)"), run.out());
        double[] reference = project.referenceSums("P1/J5/J5_particles.cs");
        assertTrue(run.out().contains("images         " + reference.length), run.out());
    }

    @Test
    void aPlainNpyIsStillInspectedAsANpy() throws Exception {
        Path npy = dir.resolve("plain.npy");
        PythonPeer.run("import sys, numpy as np; np.save(sys.argv[1], np.arange(6, dtype='<f4').reshape(2, 3))", npy);
        CliRun run = CliRun.of("inspect", npy.toString(), "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode facts = new ObjectMapper().readTree(run.out());
        assertEquals("npy 1.0", facts.get("format").asText());
        assertEquals(15.0, facts.get("sum").asDouble());
    }
}
