package dev.memfit.synthetic;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.DType;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.io.storage.TempFiles;
import dev.memfit.io.mrc.Mrc;
import dev.memfit.io.mrc.MrcHeader;
import dev.memfit.io.mrc.MrcWriter;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.UnitSphereSampler;
import org.apache.commons.rng.sampling.distribution.ZigguratSampler;
import org.apache.commons.rng.simple.RandomSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Cryo-EM-like particle images with a known answer: projections of a small 3D density in one of two
 * conformations, at uniformly random orientations, with Gaussian noise.
 *
 * <p>The density is a sum of Gaussian blobs; in conformation 1 two of them (an "arm") swing to another place. The
 * projection of an isotropic Gaussian along z is a 2D Gaussian at the rotated centre, so images are exact and fast
 * to make. Orientations are rotations by a uniformly random angle up to {@code maxAngle} degrees about a uniformly
 * random axis: 180 gives all orientations; small values mimic a strongly preferred orientation, the regime where a
 * pose-free image VAE can see the conformation (cryoDRGN searches or is given poses; this generator is for loaders,
 * not for reconstruction). Written as {@code particles_NNN.mrcs} stacks, a RELION {@code particles.star} that lists them and
 * {@code conformations.npy} (int8, one per particle).
 */
public final class SyntheticParticles {

    /** Blob centres in units of the box half-width, conformation 0; blobs 4 and 5 move in conformation 1. */
    private static final double[][] CENTRES = {
        {0.00, 0.00, 0.00}, {0.30, 0.05, -0.10}, {-0.25, 0.20, 0.10}, {0.05, -0.30, 0.15},
        {0.45, 0.30, 0.00}, {0.60, 0.45, 0.05},
    };
    private static final double[][] MOVED = {{-0.35, -0.40, -0.20}, {-0.50, -0.55, -0.25}};
    private static final double[] AMPLITUDES = {1.0, 0.8, 0.8, 0.7, 0.9, 0.9};

    private SyntheticParticles() {
    }

    /**
     * What was written.
     *
     * @param star the RELION star file listing every particle
     * @param stacks the {@code .mrcs} files
     * @param conformations the true conformation (0 or 1) of each particle, also in {@code conformations.npy}
     */
    public record Written(Path star, List<Path> stacks, byte[] conformations) {
    }

    /**
     * Starts configuring a data set: {@code setParticles} and {@code setSize} are required; defaults are 1,000
     * images per stack, noise 0.5, orientations within 180 degrees (all), seed 1 and a console progress bar.
     *
     * <pre>{@code
     * SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(10_000).setSize(64)
     *         .optNoise(0.3).optMaxAngle(30).optSeed(7).write(Path.of("particles"));
     * }</pre>
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures a particle data set; {@link #write(Path)} validates the settings and writes it. */
    public static final class Builder {

        private long particles;
        private int size;
        private int perStack = 1_000;
        private double noise = 0.5;
        private double maxAngle = 180;
        private long seed = 1;
        private ProgressListener progress = ProgressListener.console();

        private Builder() {
        }

        /**
         * Sets the number of images (required).
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder setParticles(long count) {
            this.particles = count;
            return this;
        }

        /**
         * Sets the image width and height in pixels (required).
         *
         * @param pixels at least 8
         * @return this builder
         */
        public Builder setSize(int pixels) {
            this.size = pixels;
            return this;
        }

        /**
         * Sets the number of images per {@code .mrcs} file (default 1,000).
         *
         * @param images at least 1
         * @return this builder
         */
        public Builder optPerStack(int images) {
            this.perStack = images;
            return this;
        }

        /**
         * Sets the standard deviation of the added Gaussian noise, relative to the clean image's peak of about 1
         * (default 0.5).
         *
         * @param sigma at least 0
         * @return this builder
         */
        public Builder optNoise(double sigma) {
            this.noise = sigma;
            return this;
        }

        /**
         * Sets the largest rotation from the reference view (default 180: any orientation; small values mimic a
         * preferred orientation).
         *
         * @param degrees in [0, 180]
         * @return this builder
         */
        public Builder optMaxAngle(double degrees) {
            this.maxAngle = degrees;
            return this;
        }

        /**
         * Sets the seed (default 1): the same settings write the same files.
         *
         * @param value the seed
         * @return this builder
         */
        public Builder optSeed(long value) {
            this.seed = value;
            return this;
        }

        /**
         * Sets where progress goes (default {@link ProgressListener#console()}).
         *
         * @param listener the listener, such as {@link ProgressListener#silent()}
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
            return this;
        }

        /**
         * Validates the settings, then generates and writes the data set.
         *
         * @param directory where to write (created if needed)
         * @return the files and the true conformations
         * @throws MemfitException naming the setting to change
         */
        public Written write(Path directory) {
            if (directory == null) {
                throw new MemfitException("write(directory) needs a folder to write the particles to");
            }
            if (particles < 1 || particles > Integer.MAX_VALUE - 8) {
                throw new MemfitException("setParticles(n) is required, with n from 1 to 2^31 - 9, got " + particles);
            }
            if (size < 8) {
                throw new MemfitException("setSize(pixels) is required, with at least 8 pixels, got " + size);
            }
            if (perStack < 1) {
                throw new MemfitException("optPerStack needs at least 1 image per stack, got " + perStack);
            }
            if (!(noise >= 0)) {
                throw new MemfitException("optNoise needs a standard deviation >= 0, got " + noise);
            }
            if (!(maxAngle >= 0 && maxAngle <= 180)) {
                throw new MemfitException("optMaxAngle needs degrees in [0, 180], got " + maxAngle);
            }
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
            return SyntheticParticles.write(directory, this);
        }
    }

    private static Written write(Path directory, Builder settings) {
        // one writer per folder (it holds the stacks, the STAR file and the labels together)
        try (OutputLock lock = OutputLock.acquireFolder(directory)) {
            return writeStacks(directory, settings);
        }
    }

    private static Written writeStacks(Path directory, Builder settings) {
        long particles = settings.particles;
        int size = settings.size;
        int perStack = settings.perStack;
        double noise = settings.noise;
        double maxAngle = settings.maxAngle;
        long seed = settings.seed;
        UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
        UnitSphereSampler axis = UnitSphereSampler.of(rng, 3);
        ZigguratSampler.NormalizedGaussian gaussian = ZigguratSampler.NormalizedGaussian.of(rng);
        byte[] conformations = new byte[Math.toIntExact(particles)];
        List<Path> stacks = new ArrayList<>();
        StringBuilder star = new StringBuilder("# written by memfit SyntheticParticles\n\ndata_particles\n\nloop_\n"
                + "_rlnImageName #1\n_rlnClassNumber #2\n");
        double sigma = 0.08 * size;
        long pixels = (long) size * size;
        try (Arena arena = Arena.ofConfined();
             ProgressListener.Task progress = settings.progress.start("Writing particles", particles, "images")) {
            MemorySegment image = arena.allocate(pixels * Float.BYTES);
            for (long first = 0, file = 0; first < particles; first += perStack, file++) {
                int n = (int) Math.min(perStack, particles - first);
                Path stack = directory.resolve(String.format("particles_%03d.mrcs", file));
                try (MrcWriter writer = Mrc.create(stack, MrcHeader.builder().setWidth(size).setHeight(size)
                        .setImages(n).optVoxelSize(3.0).build())) {
                    for (int i = 0; i < n; i++) {
                        int conformation = rng.nextBoolean() ? 1 : 0;
                        conformations[Math.toIntExact(first + i)] = (byte) conformation;
                        project(image, size, sigma, rotation(axis.sample(), Math.toRadians(maxAngle) * rng.nextDouble()), conformation);
                        for (long p = 0; p < pixels; p++) {
                            float clean = image.getAtIndex(ValueLayout.JAVA_FLOAT, p);
                            image.setAtIndex(ValueLayout.JAVA_FLOAT, p, (float) (clean + noise * gaussian.sample()));
                        }
                        writer.writeImages(i, image);
                        star.append(i + 1).append('@').append(stack.getFileName()).append(' ').append(conformation + 1).append('\n');
                        progress.step(1);
                    }
                    writer.commit();
                }
                stacks.add(stack);
            }
        }
        Path starFile = directory.resolve("particles.star");
        try {
            Path temporary = TempFiles.beside(starFile);
            Files.writeString(temporary, star);
            AtomicMove.replace(temporary, starFile);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + starFile, e);
        }
        Npy.write(directory.resolve("conformations.npy"), NpyHeader.of(DType.INT8, particles), MemorySegment.ofArray(conformations));
        return new Written(starFile, stacks, conformations);
    }

    /** The rotation by {@code angle} radians about a unit axis, as a matrix (from the unit quaternion). */
    private static double[][] rotation(double[] axis, double angle) {
        double w = Math.cos(angle / 2);
        double x = axis[0] * Math.sin(angle / 2);
        double y = axis[1] * Math.sin(angle / 2);
        double z = axis[2] * Math.sin(angle / 2);
        return new double[][]{
            {1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)},
            {2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)},
            {2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)},
        };
    }

    private static void project(MemorySegment image, int size, double sigma, double[][] rotation, int conformation) {
        image.fill((byte) 0);
        double half = size / 2.0;
        double twoSigmaSquared = 2 * sigma * sigma;
        for (int b = 0; b < CENTRES.length; b++) {
            double[] centre = conformation == 1 && b >= 4 ? MOVED[b - 4] : CENTRES[b];
            double px = half + half * (rotation[0][0] * centre[0] + rotation[0][1] * centre[1] + rotation[0][2] * centre[2]);
            double py = half + half * (rotation[1][0] * centre[0] + rotation[1][1] * centre[1] + rotation[1][2] * centre[2]);
            for (int row = 0; row < size; row++) {
                double dy = row + 0.5 - py;
                for (int col = 0; col < size; col++) {
                    double dx = col + 0.5 - px;
                    long at = (long) row * size + col;
                    float value = image.getAtIndex(ValueLayout.JAVA_FLOAT, at);
                    image.setAtIndex(ValueLayout.JAVA_FLOAT, at,
                            (float) (value + AMPLITUDES[b] * Math.exp(-(dx * dx + dy * dy) / twoSigmaSquared)));
                }
            }
        }
    }
}
