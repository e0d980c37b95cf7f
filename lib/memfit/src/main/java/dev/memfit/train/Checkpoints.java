package dev.memfit.train;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.io.storage.TempFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * When and where a trainer saves checkpoints, and how many it keeps: set on a trainer's builder with
 * {@code optCheckpoints}, e.g.
 *
 * <pre>{@code
 * Checkpoints policy = Checkpoints.builder().setFolder(Path.of("runs/topics")).optEverySteps(200)
 *         .optEveryTime(Duration.ofMinutes(10)).optKeep(3).build();
 * TopicModel.builder().setTopics(10).optCheckpoints(policy).build();
 * }</pre>
 *
 * <p>A checkpoint holds the model's parameters, the optimizer's moments and step counts, the loader's position
 * ({@link dev.memfit.data.LoaderState}), the loss history and the settings; the random noise of a step is a function of
 * the seed and the step number, so nothing else is needed to continue. {@code fit} first looks in the folder: it
 * resumes from the newest checkpoint whose checksums hold (a corrupt or torn one is renamed {@code *.corrupt} and the
 * one before it used) and prints where it resumed; the resumed run takes the same steps on the same batches as an
 * uninterrupted one. A checkpoint of other data, another batch size, seed, learning rate or model is refused with the
 * difference named. Files are {@code checkpoint-<step>.h5}, HDF5 that h5py reads, written under a temporary name and
 * renamed.
 *
 * <p>Checkpoints are taken only between optimizer steps (never inside an accumulation of micro-batches), after the
 * step that makes the interval due, and once more when the fit ends. Immutable.
 */
public final class Checkpoints {

    private static final Pattern NAME = Pattern.compile("checkpoint-(\\d+)\\.h5");

    private final long everySteps;
    private final Duration everyTime;
    private final int keep;
    private final Path dir;
    private final boolean resume;

    private Checkpoints(Builder settings) {
        this.everySteps = settings.everySteps;
        this.everyTime = settings.everyTime;
        this.keep = settings.keep;
        this.dir = settings.folder;
        this.resume = settings.resume;
    }

    /**
     * Starts a policy: {@code setFolder} is required, and at least one interval ({@code optEverySteps},
     * {@code optEveryTime}); keeps 2 and resumes by default.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Settings of a {@link Checkpoints} policy; {@link #build()} checks them. */
    public static final class Builder {
        private long everySteps;
        private boolean everyStepsSet;
        private Duration everyTime;
        private int keep = 2;
        private Path folder;
        private boolean resume = true;

        private Builder() {
        }

        /**
         * Sets the folder of the checkpoints (created when missing); required. One folder per run: a fit resumes
         * from whatever checkpoints the folder holds.
         *
         * @param path the folder
         * @return this builder
         */
        public Builder setFolder(Path path) {
            this.folder = path;
            return this;
        }

        /**
         * Saves after every {@code steps} optimizer steps (with {@link #optEveryTime}: whichever comes first).
         *
         * @param steps at least 1
         * @return this builder
         */
        public Builder optEverySteps(long steps) {
            this.everySteps = steps;
            this.everyStepsSet = true;
            return this;
        }

        /**
         * Saves after the first optimizer step that ends at least {@code interval} after the last checkpoint (or the
         * start of the fit); with {@link #optEverySteps}, whichever comes first.
         *
         * @param interval positive
         * @return this builder
         */
        public Builder optEveryTime(Duration interval) {
            this.everyTime = interval;
            return this;
        }

        /**
         * Keeps the newest {@code count} checkpoints and deletes older ones (default 2, so that a checkpoint found
         * corrupt still leaves one to resume from).
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder optKeep(int count) {
            this.keep = count;
            return this;
        }

        /**
         * Whether {@code fit} resumes from the folder's newest valid checkpoint (default true); false starts over and
         * deletes the folder's checkpoints when the first new one is written.
         *
         * @param enabled false to start over
         * @return this builder
         */
        public Builder optResume(boolean enabled) {
            this.resume = enabled;
            return this;
        }

        /**
         * Checks the settings and makes the policy.
         *
         * @return the policy, for a trainer's {@code optCheckpoints}
         * @throws MemfitException naming the setting to change
         */
        public Checkpoints build() {
            if (folder == null) {
                throw new MemfitException("Checkpoints need a folder: call setFolder(Path.of(\"...\")) on the builder");
            }
            if (everyStepsSet && everySteps < 1) {
                throw new MemfitException("Checkpoints optEverySteps(steps) needs at least 1 step, got " + everySteps);
            }
            if (everyTime != null && (everyTime.isNegative() || everyTime.isZero())) {
                throw new MemfitException("Checkpoints optEveryTime(interval) needs a positive duration, got " + everyTime);
            }
            if (everySteps == 0 && everyTime == null) {
                throw new MemfitException("Checkpoints need an interval: optEverySteps(n), optEveryTime(duration) or both");
            }
            if (keep < 1) {
                throw new MemfitException("Checkpoints optKeep(count) needs at least 1, got " + keep);
            }
            return new Checkpoints(this);
        }
    }

    /**
     * The folder.
     *
     * @return the folder, or null when not set yet
     */
    public Path dir() {
        return dir;
    }

    /**
     * The checkpoints kept.
     *
     * @return how many
     */
    public int keep() {
        return keep;
    }

    /**
     * Whether a fit resumes from the folder.
     *
     * @return true by default
     */
    public boolean resumes() {
        return resume;
    }

    /**
     * Whether a checkpoint is due after a step.
     *
     * @param stepsSinceLast optimizer steps since the last checkpoint (or the start of the fit)
     * @param sinceLast time since then
     * @return true when either interval has passed
     */
    boolean due(long stepsSinceLast, Duration sinceLast) {
        return everySteps > 0 && stepsSinceLast >= everySteps
                || everyTime != null && sinceLast.compareTo(everyTime) >= 0;
    }

    /**
     * The checkpoints in a folder, newest first, without reading them.
     *
     * @param folder the folder
     * @return the files named {@code checkpoint-<step>.h5} with their steps; empty when the folder does not exist
     */
    public static List<Saved> list(Path folder) {
        if (!Files.isDirectory(folder)) {
            return List.of();
        }
        List<Saved> found = new ArrayList<>();
        try (Stream<Path> files = Files.list(folder)) {
            files.forEach(file -> {
                String name = file.getFileName().toString();
                Matcher matcher = NAME.matcher(name);
                if (matcher.matches() && !TempFiles.isTemporary(name)) {
                    try {
                        found.add(new Saved(file, Long.parseLong(matcher.group(1)), Files.size(file)));
                    } catch (IOException e) {
                        // deleted while listing: not a checkpoint any more
                    }
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list checkpoints in " + folder, e);
        }
        found.sort(Comparator.comparingLong(Saved::step).reversed());
        return found;
    }

    /**
     * Checks a checkpoint's checksums without loading it into a model.
     *
     * @param file a checkpoint
     * @throws InvalidFileException naming what is wrong when it is torn, corrupt or not a checkpoint
     */
    public static void verify(Path file) {
        CheckpointFile.read(file).close();
    }

    /** The file name of the checkpoint after {@code step} optimizer steps. */
    static String fileName(long step) {
        return String.format("checkpoint-%012d.h5", step);
    }

    @Override
    public String toString() {
        String when = everySteps > 0 ? "every " + everySteps + " steps" : "";
        if (everyTime != null) {
            when += (when.isEmpty() ? "every " : " or every ") + everyTime.toString().substring(2).toLowerCase();
        }
        return "Checkpoints[" + when + ", keep " + keep + ", in " + dir + (resume ? "" : ", starting over") + "]";
    }

    /**
     * A checkpoint file in a folder.
     *
     * @param file the file
     * @param step the optimizer steps taken before it was saved
     * @param bytes its size
     */
    public record Saved(Path file, long step, long bytes) {
    }
}
