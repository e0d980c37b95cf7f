package dev.memfit.data;

import dev.memfit.source.SampleSource;
import java.nio.file.Path;

/**
 * The entry point to loading: pick a file or a source, then configure batches.
 *
 * <pre>{@code
 * Loader loader = Datasets.npy(path).mapped().batchSize(256).shuffle(42).prefetch(2).loader();
 * Loader fromRam = Datasets.of(source).batchSize(256).shuffle(42).loader();
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
}
