package dev.memfit.train;

import ai.djl.ndarray.NDArray;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.data.Loader;
import dev.memfit.data.LoaderState;
import dev.memfit.io.storage.OutputLock;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The checkpoints of one fit: finds and restores the newest valid one before the first step, writes new ones when
 * the policy says, prunes old ones, and counts what they cost.
 */
final class Checkpointing implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Checkpoints policy;
    private final String task;
    private final Fit fit;
    private final ProgressListener progress;
    private final long started = System.nanoTime();
    private long lastSave = started;
    private boolean startingOver;
    private Path resumedFrom;
    private long resumedAtStep;
    private final List<String> skipped = new ArrayList<>();
    private int written;
    private double seconds;
    private long lastBytes;
    private OutputLock lock;

    Checkpointing(Checkpoints policy, String task, Fit fit, ProgressListener progress) {
        this.policy = policy;
        this.task = task;
        this.fit = fit;
        this.progress = progress;
    }

    /**
     * What a checkpoint's {@code /state} holds besides the arrays.
     *
     * @param version the format's version
     * @param settings the fit's and the model's settings, compared on resume
     * @param epoch the epoch under way, from 1
     * @param epochBatches its batches done
     * @param epochLossSum its summed loss so far
     * @param epochSamples its samples so far
     * @param epochSteps its optimizer steps so far
     * @param epochSeconds its wall time so far
     * @param steps optimizer steps over all epochs
     * @param seconds wall time of the fit so far
     * @param history the finished epochs
     * @param loader the loader's state ({@link LoaderState#toJson()})
     * @param counters the optimizers' counters
     */
    record State(long version, Map<String, String> settings, int epoch, long epochBatches, double epochLossSum,
                 long epochSamples, long epochSteps, double epochSeconds, long steps, double seconds,
                 List<EpochStats> history, String loader, Map<String, Long> counters) {
    }

    /** Restores the newest valid checkpoint of the folder into the run, the loader and the model, if there is one. */
    void resume(Fit.Run run, Loader loader, Fit.Model model) {
        if (model.stateArrays().isEmpty()) {
            throw new IllegalStateException(task + " has no state to checkpoint");
        }
        Path dir = policy.dir();
        // one fit per folder at a time; taking the lock also removes the temporary files of a killed write
        lock = OutputLock.acquireFolder(dir);
        if (!policy.resumes()) {
            startingOver = true;
            return;
        }
        for (Checkpoints.Saved saved : Checkpoints.list(dir)) {
            CheckpointFile.Contents contents;
            try {
                contents = CheckpointFile.read(saved.file());
            } catch (InvalidFileException e) {
                skipped.add(saved.file().getFileName() + " (" + e.getMessage() + ")");
                setAside(saved.file());
                continue;
            }
            try (contents) {
                restore(contents, run, loader, model);
            }
            resumedFrom = saved.file();
            resumedAtStep = run.globalSteps;
            progress.note(String.format(Locale.ROOT, "%s: resumed from %s: epoch %d, batch %d of %d, step %d%s", task,
                    saved.file(), run.epoch, run.batches, loader.batchesPerEpoch(), run.globalSteps, skippedNote()));
            return;
        }
        if (!skipped.isEmpty()) {
            progress.note(task + ": no valid checkpoint in " + dir + ", starting from the beginning" + skippedNote());
        }
    }

    private String skippedNote() {
        return skipped.isEmpty() ? "" : "; skipped as corrupt (renamed *.corrupt): " + String.join("; ", skipped);
    }

    /** Renames a corrupt checkpoint so that it is neither resumed from nor counted as the newest again. */
    private static void setAside(Path file) {
        try {
            Files.move(file, file.resolveSibling(file.getFileName() + ".corrupt"),
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            // left in place: it is found corrupt again next time, which costs a read but loses nothing
        }
    }

    private void restore(CheckpointFile.Contents contents, Fit.Run run, Loader loader, Fit.Model model) {
        Path file = contents.file();
        State state;
        try {
            state = JSON.readValue(contents.state(), State.class);
        } catch (JsonProcessingException e) {
            throw new InvalidFileException(file, -1, "the training state of a " + CheckpointFile.FORMAT,
                    "unreadable JSON (" + e.getOriginalMessage() + ")", e);
        }
        if (state.version() != CheckpointFile.VERSION) {
            throw new InvalidFileException(file, -1, "checkpoint format version " + CheckpointFile.VERSION,
                    "version " + state.version() + ": written by another memfit; start over with Checkpoints.optResume(false)");
        }
        List<String> differences = new ArrayList<>();
        Map<String, String> now = settings(model);
        now.forEach((name, value) -> {
            String saved = state.settings().get(name);
            if (!Objects.equals(saved, value)) {
                differences.add(name + ": " + (saved == null ? "none" : saved) + " saved, " + value + " now");
            }
        });
        if (!differences.isEmpty()) {
            throw new MemfitException(file + " was saved by a fit with other settings: " + String.join("; ", differences)
                    + ". Resume with the same settings, or point the checkpoints to a new folder to start another run");
        }
        LoaderState saved = LoaderState.fromJson(state.loader());
        try {
            loader.resumeFrom(saved);
        } catch (MemfitException e) {
            throw new MemfitException("cannot resume " + file + ": " + e.getMessage(), e);
        }
        Map<String, NDArray> arrays = model.stateArrays();
        if (!arrays.keySet().equals(contents.arrays().keySet())) {
            throw new InvalidFileException(file, -1, "the arrays " + arrays.keySet(), "the arrays " + contents.arrays().keySet()
                    + ": the checkpoint is of another model");
        }
        arrays.forEach((name, target) -> contents.arrays().get(name).copyInto(name, target, file));
        model.restoreCounters(state.counters());
        run.epoch = state.epoch();
        run.batches = state.epochBatches();
        run.lossSum = state.epochLossSum();
        run.samples = state.epochSamples();
        run.steps = state.epochSteps();
        run.epochSeconds = state.epochSeconds();
        run.globalSteps = state.steps();
        run.secondsBefore = state.seconds();
        run.history.clear();
        run.history.addAll(state.history());
        run.restoreStepLosses(contents.stepLosses());
    }

    private Map<String, String> settings(Fit.Model model) {
        Map<String, String> settings = new LinkedHashMap<>(fit.settings());
        settings.putAll(model.settings());
        return settings;
    }

    /** Whether the policy asks for a checkpoint now. */
    boolean due(Fit.Run run) {
        return run.sinceCheckpoint > 0 && policy.due(run.sinceCheckpoint, Duration.ofNanos(System.nanoTime() - lastSave));
    }

    /** Writes a checkpoint of the run as it is now (between steps), then deletes those beyond the policy's count. */
    void save(Fit.Run run, Loader loader, Fit.Model model) {
        long start = System.nanoTime();
        State state = new State(CheckpointFile.VERSION, settings(model), run.epoch, run.batches, run.lossSum, run.samples,
                run.steps, run.epochSeconds, run.globalSteps, run.secondsBefore + (start - started) / 1e9,
                List.copyOf(run.history), loader.state().toJson(), model.counters());
        String json;
        try {
            json = JSON.writeValueAsString(state);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot describe the training state as JSON", e);
        }
        Path target = policy.dir().resolve(Checkpoints.fileName(run.globalSteps));
        lastBytes = CheckpointFile.write(target, json, model.stateArrays(), run.stepLosses());
        written++;
        prune(target);
        run.sinceCheckpoint = 0;
        lastSave = System.nanoTime();
        seconds += (lastSave - start) / 1e9;
    }

    /** Keeps the newest checkpoints the policy allows (only the new one when starting over). */
    private void prune(Path newest) {
        int kept = 0;
        for (Checkpoints.Saved saved : Checkpoints.list(policy.dir())) {      // most steps first
            if (saved.file().equals(newest) || !startingOver && kept < policy.keep()) {
                kept++;
                continue;
            }
            try {
                Files.deleteIfExists(saved.file());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot delete the old checkpoint " + saved.file(), e);
            }
        }
        startingOver = false;
    }

    /** Saves the end of the fit unless the last step was just saved, so that running the fit again does nothing. */
    void finish(Fit.Run run, Loader loader, Fit.Model model) {
        if (run.sinceCheckpoint > 0) {
            save(run, loader, model);
        }
    }

    /** Releases the folder for the next fit. */
    @Override
    public void close() {
        if (lock != null) {
            lock.close();
            lock = null;
        }
    }

    /** What the checkpoints of this fit cost, and where it resumed. */
    FitResult.CheckpointReport report() {
        return new FitResult.CheckpointReport(resumedFrom, resumedAtStep, written, seconds, lastBytes, List.copyOf(skipped));
    }
}
