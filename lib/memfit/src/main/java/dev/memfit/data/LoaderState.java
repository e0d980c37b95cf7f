package dev.memfit.data;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.MemfitException;

import java.util.ArrayList;
import java.util.List;

/**
 * Where a loader is in its run: enough to continue in another process exactly where this one stopped.
 *
 * <p>The order of every epoch is a pure function of the sampler's settings and the epoch number, so resuming is a
 * skip to {@code batchesDone} of {@code epoch}, not a replay. The other fields identify the data and the settings;
 * a loader refuses a state whose data or settings differ from its own ({@link #differencesFrom(LoaderState)}), so two
 * orders are never mixed silently. Small and JSON-serialisable ({@link #toJson()}, {@link #fromJson(String)}), for
 * checkpoints.
 *
 * @param source what the batches are read from, with its size (file names and sizes, shard checksums)
 * @param samples the samples in the data
 * @param sampler the settings that fix the order ({@link dev.memfit.sample.Sampler#settings()})
 * @param batchSize samples per batch
 * @param dropLast whether a short last batch is dropped
 * @param epoch the epoch to continue in
 * @param batchesDone batches of that epoch already handed out (0: the epoch starts from its beginning)
 */
public record LoaderState(String source, long samples, String sampler, int batchSize, boolean dropLast, long epoch,
                          long batchesDone) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * Checks the fields.
     *
     * @throws MemfitException when a count is negative or a description missing
     */
    public LoaderState {
        if (source == null || sampler == null) {
            throw new MemfitException("loader state: source and sampler must be set");
        }
        if (samples < 0 || batchSize < 1 || epoch < 0 || batchesDone < 0) {
            throw new MemfitException("loader state: samples " + samples + ", batch size " + batchSize + ", epoch " + epoch
                    + ", batches done " + batchesDone + ": counts must be non-negative and the batch size at least 1");
        }
    }

    /**
     * What differs between this state's data and settings and another's (the position is not compared).
     *
     * @param other the state to compare with
     * @return one line per difference, e.g. {@code "batch size: 64 saved, 128 now"}; empty when they match
     */
    public List<String> differencesFrom(LoaderState other) {
        List<String> differences = new ArrayList<>();
        compare(differences, "data", source, other.source);
        compare(differences, "samples", Long.toString(samples), Long.toString(other.samples));
        compare(differences, "sampler", sampler, other.sampler);
        compare(differences, "batch size", Integer.toString(batchSize), Integer.toString(other.batchSize));
        compare(differences, "drop last", Boolean.toString(dropLast), Boolean.toString(other.dropLast));
        return differences;
    }

    private static void compare(List<String> differences, String what, String saved, String now) {
        if (!saved.equals(now)) {
            differences.add(what + ": " + saved + " saved, " + now + " now");
        }
    }

    /**
     * This state as one JSON object.
     *
     * @return the JSON text
     */
    public String toJson() {
        try {
            return JSON.writeValueAsString(this);
        } catch (JsonProcessingException e) {
            throw new MemfitException("loader state could not be written as JSON: " + e.getOriginalMessage(), e);
        }
    }

    /**
     * Reads a state written by {@link #toJson()}.
     *
     * @param json the JSON text
     * @return the state
     * @throws MemfitException when the text is not a loader state
     */
    public static LoaderState fromJson(String json) {
        try {
            return JSON.readValue(json, LoaderState.class);
        } catch (JsonProcessingException e) {
            throw new MemfitException("not a loader state: " + e.getOriginalMessage(), e);
        }
    }
}
