package dev.memfit.data;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.MemfitException;

import java.util.ArrayList;
import java.util.List;

/**
 * Where a loader is in its run: enough to continue in another process exactly where this one stopped.
 *
 * <p>The order of every epoch is a pure function of the sampler's settings and the epoch number, so resuming is a
 * skip to {@code batchesDone} of {@code epoch} (an {@code .h5ad} stream replays its buffer's draws on indices). The
 * other fields identify the data and the settings; a loader refuses a state whose data or settings differ from its
 * own ({@link #differencesFrom(LoaderState)}), so two orders are never mixed silently. Small and JSON-serialisable
 * ({@link #toJson()}, {@link #fromJson(String)}), for checkpoints.
 *
 * <p>The partition of a data-parallel job ({@code rank} of {@code worldSize}, from a
 * {@link dev.memfit.sample.DistributedShardSampler}) is kept apart from the other settings
 * ({@link #partitionDifferencesFrom(LoaderState)}): a job may restart with another world size at an epoch boundary
 * ({@code batchesDone} 0, which is how {@link Loader#state()} saves a finished epoch), and the next epoch is then
 * simply partitioned for the new world; inside an epoch the rank's remaining samples depend on the old partition, so
 * a different world size or rank is refused there. States saved before these two fields existed read as rank 0 of 1.
 *
 * @param source what the batches are read from, with its size (file names and sizes, shard checksums)
 * @param samples the samples in the data
 * @param sampler the settings that fix the order ({@link dev.memfit.sample.Sampler#settings()}), rank and world size
 *                apart
 * @param batchSize samples per batch
 * @param dropLast whether a short last batch is dropped
 * @param epoch the epoch to continue in
 * @param batchesDone batches of that epoch already handed out (0: the epoch starts from its beginning)
 * @param rank this process's rank in a data-parallel job (0 when there is none)
 * @param worldSize the ranks of the job (1 when there is none)
 */
public record LoaderState(String source, long samples, String sampler, int batchSize, boolean dropLast, long epoch,
                          long batchesDone, int rank, int worldSize) {

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
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new MemfitException("loader state: rank " + rank + " of world size " + worldSize
                    + ": the world size must be at least 1 and the rank in [0, world size)");
        }
    }

    /**
     * A state outside any data-parallel job: rank 0 of 1.
     *
     * @param source what the batches are read from
     * @param samples the samples in the data
     * @param sampler the settings that fix the order
     * @param batchSize samples per batch
     * @param dropLast whether a short last batch is dropped
     * @param epoch the epoch to continue in
     * @param batchesDone batches of that epoch already handed out
     */
    public LoaderState(String source, long samples, String sampler, int batchSize, boolean dropLast, long epoch,
                       long batchesDone) {
        this(source, samples, sampler, batchSize, dropLast, epoch, batchesDone, 0, 1);
    }

    /**
     * This state at another position, the data and settings unchanged.
     *
     * @param epoch the epoch
     * @param batchesDone batches of it handed out
     * @return the state
     */
    public LoaderState at(long epoch, long batchesDone) {
        return new LoaderState(source, samples, sampler, batchSize, dropLast, epoch, batchesDone, rank, worldSize);
    }

    /**
     * What differs between this state's partition of a data-parallel job and another's.
     *
     * @param other the state to compare with
     * @return one line per difference, e.g. {@code "world size: 4 saved, 2 now"}; empty when they match
     */
    public List<String> partitionDifferencesFrom(LoaderState other) {
        List<String> differences = new ArrayList<>();
        compare(differences, "world size", Integer.toString(worldSize), Integer.toString(other.worldSize));
        compare(differences, "rank", Integer.toString(rank), Integer.toString(other.rank));
        return differences;
    }

    /**
     * What differs between this state's data and settings and another's (neither the position nor the partition, rank
     * and world size, is compared: see {@link #partitionDifferencesFrom(LoaderState)}).
     *
     * @param other the state to compare with
     * @return one line per difference, e.g. {@code "batch size: 64 saved, 128 now"}; empty when they match
     */
    public List<String> differencesFrom(LoaderState other) {
        List<String> differences = new ArrayList<>();
        // a state saved before fingerprints had a content part is compared without it
        String saved = dev.memfit.source.SampleSource.withoutContent(source);
        String now = dev.memfit.source.SampleSource.withoutContent(other.source);
        boolean bothHaveContent = !saved.equals(source) && !now.equals(other.source);
        compare(differences, "data", bothHaveContent ? source : saved, bothHaveContent ? other.source : now);
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
        JsonNode node;
        try {
            node = JSON.readTree(json);
        } catch (JsonProcessingException e) {
            throw new MemfitException("not a loader state: " + e.getOriginalMessage(), e);
        }
        if (node == null || !node.isObject()) {
            throw new MemfitException("not a loader state: expected a JSON object, got " + json);
        }
        // a state written before rank and world size were saved reads as rank 0 of 1
        return new LoaderState(text(node, "source"), number(node, "samples").asLong(), text(node, "sampler"),
                number(node, "batchSize").asInt(), bool(node, "dropLast"), number(node, "epoch").asLong(),
                number(node, "batchesDone").asLong(), node.has("rank") ? number(node, "rank").asInt() : 0,
                node.has("worldSize") ? number(node, "worldSize").asInt() : 1);
    }

    private static JsonNode field(JsonNode node, String name) {
        JsonNode value = node.get(name);
        if (value == null || value.isNull()) {
            throw new MemfitException("not a loader state: the field \"" + name + "\" is missing in " + node);
        }
        return value;
    }

    private static JsonNode number(JsonNode node, String name) {
        JsonNode value = field(node, name);
        if (!value.isIntegralNumber() || !value.canConvertToLong()) {
            throw new MemfitException("not a loader state: \"" + name + "\" should be a whole number (of at most 19 "
                    + "digits), got " + value);
        }
        return value;
    }

    private static boolean bool(JsonNode node, String name) {
        JsonNode value = field(node, name);
        if (!value.isBoolean()) {
            throw new MemfitException("not a loader state: \"" + name + "\" should be true or false, got " + value);
        }
        return value.asBoolean();
    }

    private static String text(JsonNode node, String name) {
        JsonNode value = field(node, name);
        if (!value.isTextual()) {
            throw new MemfitException("not a loader state: \"" + name + "\" should be text, got " + value);
        }
        return value.asText();
    }
}
