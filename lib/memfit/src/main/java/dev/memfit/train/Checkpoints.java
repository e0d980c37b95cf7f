package dev.memfit.train;

import dev.memfit.InvalidFileException;
import dev.memfit.io.storage.TempFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * When and where a trainer saves checkpoints, and how many it keeps: set on a trainer's builder with
 * {@code optCheckpoints}, e.g.
 *
 * <pre>{@code
 * TopicModel.builder().setTopics(10)
 *         .optCheckpoints(Checkpoints.every(200).orEvery(Duration.ofMinutes(10)).keep(3).dir(Path.of("runs/topics")))
 *         .build();
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
 * step that makes the interval due, and once more when the fit ends. Immutable: every method returns a new policy.
 */
public final class Checkpoints {

    private static final Pattern NAME = Pattern.compile("checkpoint-(\\d+)\\.h5");

    private final long everySteps;
    private final Duration everyTime;
    private final int keep;
    private final Path dir;
    private final boolean resume;

    private Checkpoints(long everySteps, Duration everyTime, int keep, Path dir, boolean resume) {
        this.everySteps = everySteps;
        this.everyTime = everyTime;
        this.keep = keep;
        this.dir = dir;
        this.resume = resume;
    }

    /**
     * Saves after every {@code steps} optimizer steps.
     *
     * @param steps at least 1
     * @return the policy (keeps 2, no folder yet: set one with {@link #dir(Path)})
     */
    public static Checkpoints every(long steps) {
        if (steps < 1) {
            throw new IllegalArgumentException("Checkpoints.every(steps) needs at least 1 step, got " + steps);
        }
        return new Checkpoints(steps, null, 2, null, true);
    }

    /**
     * Saves after the first optimizer step that ends at least {@code interval} after the last checkpoint (or the
     * start of the fit).
     *
     * @param interval positive
     * @return the policy (keeps 2, no folder yet: set one with {@link #dir(Path)})
     */
    public static Checkpoints every(Duration interval) {
        return new Checkpoints(0, positive(interval), 2, null, true);
    }

    /**
     * Also saves when {@code interval} has passed since the last checkpoint, whichever comes first.
     *
     * @param interval positive
     * @return the new policy
     */
    public Checkpoints orEvery(Duration interval) {
        return new Checkpoints(everySteps, positive(interval), keep, dir, resume);
    }

    /**
     * Also saves every {@code steps} optimizer steps, whichever comes first.
     *
     * @param steps at least 1
     * @return the new policy
     */
    public Checkpoints orEvery(long steps) {
        return new Checkpoints(every(steps).everySteps, everyTime, keep, dir, resume);
    }

    /**
     * Keeps the newest {@code count} checkpoints and deletes older ones (default 2, so that a checkpoint found
     * corrupt still leaves one to resume from).
     *
     * @param count at least 1
     * @return the new policy
     */
    public Checkpoints keep(int count) {
        if (count < 1) {
            throw new IllegalArgumentException("Checkpoints.keep(count) needs at least 1, got " + count);
        }
        return new Checkpoints(everySteps, everyTime, count, dir, resume);
    }

    /**
     * Sets the folder of the checkpoints (created when missing); required. One folder per run: a fit resumes from
     * whatever checkpoints the folder holds.
     *
     * @param folder the folder
     * @return the new policy
     */
    public Checkpoints dir(Path folder) {
        return new Checkpoints(everySteps, everyTime, keep, Objects.requireNonNull(folder, "folder"), resume);
    }

    /**
     * Whether {@code fit} resumes from the folder's newest valid checkpoint (default true); false starts over and
     * deletes the folder's checkpoints when the first new one is written.
     *
     * @param enabled false to start over
     * @return the new policy
     */
    public Checkpoints optResume(boolean enabled) {
        return new Checkpoints(everySteps, everyTime, keep, dir, enabled);
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

    /** Checks that the policy can be used; called when a trainer is built. */
    void validate() {
        if (dir == null) {
            throw new IllegalArgumentException("Checkpoints need a folder: add .dir(Path.of(\"...\")) to the policy");
        }
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

    private static Duration positive(Duration interval) {
        if (interval == null || interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("Checkpoints.every(interval) needs a positive duration, got " + interval);
        }
        return interval;
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
