package dev.memfit.io.mrc;

import dev.memfit.PythonPeer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A small RELION project made by RELION itself (Debian's {@code relion} 3.1), laid out as every real project is: the
 * commands run in the project folder and each job writes into {@code Kind/jobNNN/}, naming files from the project
 * folder. Micrographs (three of 256x256 pixels with six Gaussian blobs each) and hand-picked coordinates are written
 * with numpy and mrcfile; then, as a user would: Import (job001), Extract (job004: 64-pixel particles, normalized),
 * Class2D (job007: 2 classes, 2 iterations) and Select (job008: the particles split in two).
 */
public record RelionProject(Path root) {

    /** The STAR files of the project that list particles, relative to its folder. */
    public static final List<String> PARTICLE_STARS = List.of(
            "Extract/job004/particles.star",
            "Extract/job004/Micrographs/mic001_extract.star",
            "Class2D/job007/run_it002_data.star",
            "Select/job008/particles_split1.star");

    /** Particles per micrograph, and micrographs. */
    public static final int PICKS = 6;
    /** Micrographs in the project. */
    public static final int MICROGRAPHS = 3;

    /**
     * Runs the project's jobs in a new folder.
     *
     * @param root the project folder, created
     * @return the project
     * @throws IOException when a folder cannot be made
     */
    public static RelionProject make(Path root) throws IOException {
        Files.createDirectories(root.resolve("Micrographs"));
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, mrcfile
                root = sys.argv[1]
                rng = np.random.default_rng(0)
                yy, xx = np.mgrid[:256, :256]
                for m in range(1, 4):
                    image = rng.normal(0, 1, (256, 256)).astype(np.float32)
                    with open(f'{root}/Micrographs/mic{m:03d}_manualpick.star', 'w') as picks:
                        picks.write('\\ndata_\\n\\nloop_\\n_rlnCoordinateX #1\\n_rlnCoordinateY #2\\n')
                        for _ in range(6):
                            x, y = rng.integers(40, 216, 2)
                            image += (5 * np.exp(-((xx - x) ** 2 + (yy - y) ** 2) / 50)).astype(np.float32)
                            picks.write(f'{x:.1f} {y:.1f}\\n')
                    with mrcfile.new(f'{root}/Micrographs/mic{m:03d}.mrc', overwrite=True) as mrc:
                        mrc.set_data(image)
                        mrc.voxel_size = 1.5
                print('ok')
                """, root));
        RelionProject project = new RelionProject(root);
        project.job("Import/job001", "relion_import", "--do_micrographs", "--optics_group_name", "opticsGroup1",
                "--angpix", "1.5", "--kV", "300", "--Cs", "2.7", "--Q0", "0.1", "--i", "Micrographs/*.mrc",
                "--odir", "Import/job001/", "--ofile", "micrographs.star");
        project.job("Extract/job004", "relion_preprocess", "--i", "Import/job001/micrographs.star", "--coord_dir", "./",
                "--coord_suffix", "_manualpick.star", "--part_star", "Extract/job004/particles.star",
                "--part_dir", "Extract/job004/", "--extract", "--extract_size", "64", "--norm", "--bg_radius", "25");
        project.job("Class2D/job007", "relion_refine", "--i", "Extract/job004/particles.star", "--o",
                "Class2D/job007/run", "--iter", "2", "--K", "2", "--particle_diameter", "60", "--tau2_fudge", "2",
                "--zero_mask", "--flatten_solvent", "--oversampling", "1", "--psi_step", "12", "--offset_range", "5",
                "--offset_step", "2", "--dont_combine_weights_via_disc", "--pool", "3", "--j", "1");
        project.job("Select/job008", "relion_star_handler", "--i", "Extract/job004/particles.star",
                "--o", "Select/job008/particles.star", "--split", "--nr_split", "2");
        return project;
    }

    /** Runs one RELION program in the project folder, as RELION's GUI does, after making the job's folder. */
    private void job(String folder, String... command) throws IOException {
        Path program = Path.of("/usr/bin", command[0]);
        if (!Files.isExecutable(program)) {
            throw new AssertionError(program + " not found: the RELION project tests need Debian's relion package "
                    + "(./memfit test installs it as root; or apt-get install relion)");
        }
        Files.createDirectories(root.resolve(folder));
        List<String> line = new ArrayList<>(List.of(command));
        line.set(0, program.toString());
        ProcessBuilder builder = new ProcessBuilder(line).directory(root.toFile()).redirectErrorStream(true);
        builder.environment().put("OMPI_MCA_plm", "isolated");   // openmpi, pulled in by relion, looks for rsh otherwise
        Process process = builder.start();
        byte[] output = process.getInputStream().readAllBytes();
        try {
            if (!process.waitFor(300, TimeUnit.SECONDS) || process.exitValue() != 0) {
                process.destroyForcibly();
                throw new AssertionError(String.join(" ", command) + " failed in " + root + ":\n"
                        + new String(output, StandardCharsets.UTF_8));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * The float64 sum of each particle of a STAR file, in file order, as mrcfile reads the stacks named in it from
     * the project folder (the reference: a parser of its own in Python, not memfit's).
     *
     * @param star a STAR file of the project, relative to its folder
     * @return one sum per particle
     */
    public double[] referenceSums(String star) {
        String out = PythonPeer.run("""
                import sys, mrcfile
                root, star = sys.argv[1], sys.argv[2]
                columns, names, in_loop = [], [], False
                for line in open(f'{root}/{star}'):
                    words = line.split()
                    if not words or words[0].startswith('#'):
                        continue
                    if words[0].startswith('data_'):
                        block, columns, in_loop = words[0], [], False
                    elif words[0] == 'loop_':
                        in_loop, columns = True, []
                    elif words[0].startswith('_'):
                        columns.append(words[0])
                    elif in_loop and '_rlnImageName' in columns:
                        names.append(words[columns.index('_rlnImageName')])
                stacks = {}
                for name in names:
                    index, path = name.split('@')
                    if path not in stacks:
                        stacks[path] = mrcfile.open(f'{root}/{path}', permissive=True).data
                    print(repr(float(stacks[path][int(index) - 1].astype('float64').sum())))
                """, root, star);
        return out.lines().mapToDouble(Double::parseDouble).toArray();
    }
}
