package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.io.Formats;
import dev.memfit.io.hdf5.PackedFile;
import dev.memfit.io.npy.FileSet;
import dev.memfit.shard.ShardStore;
import dev.memfit.source.SampleSource;

import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * The entry point to loading: pick a file or a source, then configure batches.
 *
 * <pre>{@code
 * Loader loader = Datasets.npy(path).mapped().optBatchSize(256).optShuffle(42).optPrefetch(2).build();
 * Loader fromRam = Datasets.of(source).optBatchSize(256).optShuffle(42).build();
 * Loader any = Datasets.open(path).optBatchSize(256).optShuffle(42).build();   // format recognised by Formats
 * }</pre>
 */
public final class Datasets {

    private Datasets() {
    }

    /**
     * A numpy {@code .npy} file whose rows are the samples.
     *
     * @param file the file
     * @return the next step: mapped or in memory
     */
    public static NpyDataset npy(Path file) {
        return new NpyDataset(file);
    }

    /**
     * Particle images: one {@code .mrcs} stack, a {@code .txt} list of stacks or a RELION {@code .star} file.
     *
     * @param path the stack or listing
     * @return the next step: eager or lazy
     */
    public static ParticleDataset particles(Path path) {
        return new ParticleDataset(path);
    }

    /**
     * Records described by an index, such as a packed HDF5 file ({@link dev.memfit.io.hdf5.PackedFile}) or a folder of
     * one-sample files ({@link dev.memfit.io.npy.FileSet}).
     *
     * @param index where each sample's bytes are
     * @return the next step: storage, then eager or lazy
     */
    public static RecordDataset records(dev.memfit.io.storage.RecordIndex index) {
        return new RecordDataset(() -> index);
    }

    /**
     * Any source. The loader does not close it: the caller keeps ownership.
     *
     * @param source the samples
     * @return the loader settings
     */
    public static LoaderBuilder of(SampleSource source) {
        return new LoaderBuilder(() -> source, false);
    }

    /**
     * A source made when the loader is built and closed with the loader, such as data read into memory on the spot.
     *
     * @param opener makes the source; called once, by {@link LoaderBuilder#build()}
     * @return the loader settings
     */
    public static LoaderBuilder owned(Supplier<? extends SampleSource> opener) {
        return new LoaderBuilder(opener::get, true);
    }

    /**
     * Any path in a format memfit reads, recognised by {@link Formats#detect}, loaded the way that suits the format:
     * a {@code .npy} memory-mapped, particle stacks and listings lazily on 4 threads, a packed HDF5 file or a folder of
     * {@code .npy} samples lazily, a shard folder through its {@link ShardStore}. For another choice, use the
     * format's own entry point ({@link #npy}, {@link #particles}, {@link #records}, {@link #shards}).
     *
     * @param path a file or folder
     * @return the loader settings
     * @throws MemfitException for an {@code .h5ad} (convert it with {@code ./memfit shard} and open the folder, or
     *         stream it with {@link #h5ad(Path)}) and for formats memfit does not read
     */
    public static LoaderBuilder open(Path path) {
        return switch (Formats.detect(path)) {
            case NPY -> npy(path).mapped();
            case MRC, STACK_LIST, STAR -> particles(path).lazy(4);
            case PACKED_HDF5 -> new RecordDataset(() -> PackedFile.open(path)).lazy(4);
            case NPY_FOLDER -> new RecordDataset(() -> FileSet.open(path)).lazy(4);
            case SHARDS -> shards(path);
            case H5AD -> throw new MemfitException(path + ": an .h5ad is not read at random by a loader; convert it "
                    + "with ./memfit shard (then Datasets.shards(folder)) or stream it with Datasets.h5ad(file)");
        };
    }

    /**
     * A folder of shards written by {@code ./memfit shard}: memory-mapped random access across the shards, checked
     * against their metadata when the loader is built. The loader closes the store.
     *
     * @param folder the shard folder
     * @return the loader settings
     */
    public static LoaderBuilder shards(Path folder) {
        return new LoaderBuilder(() -> ShardStore.open(folder), true);
    }

    /**
     * Streams an AnnData {@code .h5ad} through a shuffle buffer: no set-up, memory bounded by the buffer, every cell
     * once per epoch, in batches like every other {@link Loader} (see {@link H5adStreamBuilder}).
     *
     * @param file the {@code .h5ad}
     * @return the stream settings
     */
    public static H5adStreamBuilder h5ad(Path file) {
        return new H5adStreamBuilder(file);
    }
}
