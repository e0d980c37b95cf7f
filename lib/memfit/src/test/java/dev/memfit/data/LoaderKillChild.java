package dev.memfit.data;

import dev.memfit.io.storage.AtomicMove;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32;

/**
 * The process {@link LoaderKillResumeTest} kills: iterates a loader for some epochs as a trainer would, and after
 * every batch appends one line to a log ({@code epoch batch indices crc32}) and then saves the loader's state
 * atomically (a temporary file renamed), the checkpoint. On start it resumes from the saved state when there is one,
 * and says so in the log's first line ({@code start epoch batch}).
 *
 * <p>Arguments: {@code kind data-folder log state epochs pause-at pause-phase slow-millis}: {@code kind} one of
 * {@code npy}, {@code shards}, {@code h5ad}; {@code pause-at} the batch (counted over epochs from 0) after which the
 * process prints {@code paused} and waits to be killed, -1 for none; {@code pause-phase} {@code line} (logged, state
 * not yet saved: that batch is redone after a resume) or {@code state} (both written); {@code slow-millis} a sleep
 * after every batch, so that a kill at a random time finds it running.
 */
public final class LoaderKillChild {

    private LoaderKillChild() {
    }

    /**
     * Builds the loader of a kind, resumed from a state when one is given.
     *
     * @param kind npy, shards or h5ad
     * @param data the folder holding the inputs
     * @param state the state to resume from, or null
     * @return the loader
     */
    static Loader loader(String kind, Path data, LoaderState state) {
        return switch (kind) {
            case "npy" -> Datasets.npy(data.resolve("x.npy")).mapped().optBatchSize(64).optShuffle(7).optThreads(2)
                    .optResumeFrom(state).build();
            case "shards" -> Datasets.shards(data.resolve("shards")).optBatchSize(50).optShuffle(3).optThreads(1)
                    .optResumeFrom(state).build();
            case "h5ad" -> Datasets.h5ad(data.resolve("atlas.h5ad")).optBatchSize(40).optBlockShuffle(64, 4)
                    .optThreads(2).optShuffle(4).optResumeFrom(state).build();
            default -> throw new IllegalArgumentException("kind " + kind);
        };
    }

    /**
     * Runs the child.
     *
     * @param args see the class comment
     * @throws Exception when something fails (the test reads the message in the child's output)
     */
    public static void main(String[] args) throws Exception {
        String kind = args[0];
        Path data = Path.of(args[1]);
        Path log = Path.of(args[2]);
        Path stateFile = Path.of(args[3]);
        long epochs = Long.parseLong(args[4]);
        long pauseAt = Long.parseLong(args[5]);
        String phase = args[6];
        long slowMillis = Long.parseLong(args[7]);
        LoaderState saved = Files.exists(stateFile)
                ? LoaderState.fromJson(Files.readString(stateFile, StandardCharsets.UTF_8)) : null;
        Path temporary = stateFile.resolveSibling(stateFile.getFileName() + ".tmp");
        try (FileChannel out = FileChannel.open(log, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING);
             Loader loader = loader(kind, data, saved)) {
            long first = saved == null ? 0 : saved.epoch();
            write(out, "start " + first + " " + (saved == null ? 0 : saved.batchesDone()) + "\n");
            long perEpoch = loader.batchesPerEpoch();
            for (long epoch = first; epoch < epochs; epoch++) {
                for (Batch batch : loader.epoch(epoch)) {
                    // one write() per line: a kill leaves whole lines (or none)
                    write(out, line(batch));
                    long global = batch.epoch() * perEpoch + batch.number();
                    if (global == pauseAt && phase.equals("line")) {
                        pause(global);
                    }
                    Files.writeString(temporary, loader.state().toJson(), StandardCharsets.UTF_8);
                    AtomicMove.replace(temporary, stateFile);
                    if (global == pauseAt) {
                        pause(global);
                    }
                    if (slowMillis > 0) {
                        Thread.sleep(slowMillis);
                    }
                }
            }
        }
    }

    /** {@code epoch batch i,j,... crc32}: the batch's identity, its samples and its bytes. */
    static String line(Batch batch) {
        StringBuilder text = new StringBuilder().append(batch.epoch()).append(' ').append(batch.number()).append(' ');
        long[] indices = batch.indices();
        for (int i = 0; i < indices.length; i++) {
            text.append(i == 0 ? "" : ",").append(indices[i]);
        }
        MemorySegment bytes = batch.data();
        CRC32 crc = new CRC32();
        crc.update(bytes.asByteBuffer());
        return text.append(' ').append(Long.toHexString(crc.getValue())).append(" (").append(bytes.byteSize())
                .append(" bytes)\n").toString();
    }

    private static void write(FileChannel out, String text) throws IOException {
        ByteBuffer buffer = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
        while (buffer.hasRemaining()) {
            out.write(buffer);
        }
    }

    private static void pause(long global) throws InterruptedException {
        System.out.println("paused at batch " + global);
        System.out.flush();
        Thread.sleep(600_000);
        throw new IllegalStateException("not killed within 10 minutes of pausing");
    }
}
