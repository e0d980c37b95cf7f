package dev.memfit.source;

import dev.memfit.ProgressListener;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.io.npy.FileSet;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Writes the samples of a source as a folder of small files, one {@code .npy} each: the layout that makes training
 * slow on network storage, made on purpose to measure it (notebook 09) and to pack it.
 */
public final class SampleFiles {

    private SampleFiles() {
    }

    /**
     * Writes each sample of a source as its own {@code .npy} file ({@code sample_000000.npy}, ...), the layout
     * {@link FileSet#open} reads.
     *
     * @param source the samples
     * @param folder the folder to fill (created if needed)
     * @return the set written
     */
    public static FileSet write(SampleSource source, Path folder) {
        return write(source, folder, ProgressListener.console());
    }

    /**
     * Writes each sample of a source as its own {@code .npy} file, reporting progress to a listener.
     *
     * @param source the samples
     * @param folder the folder to fill (created if needed)
     * @param listener where progress goes, in files, such as {@link ProgressListener#silent()}
     * @return the set written
     */
    public static FileSet write(SampleSource source, Path folder, ProgressListener listener) {
        long[] shape = source.sampleShape().getShape();
        int digits = Math.max(6, Long.toString(source.size()).length());
        // the folder is locked once; each file's own lock then nests in it (no lock file per sample)
        try (OutputLock lock = OutputLock.acquireFolder(folder);
             Arena arena = Arena.ofConfined();
             ProgressListener.Task progress = listener.start("Writing " + folder.getFileName(), source.size(), "files")) {
            MemorySegment sample = arena.allocate(source.sampleBytes(), 64);
            for (long i = 0; i < source.size(); i++) {
                source.read(i, sample);
                Npy.write(folder.resolve(String.format("sample_%0" + digits + "d.npy", i)),
                        NpyHeader.of(source.dtype(), shape), sample);
                progress.step(1);
            }
        }
        return FileSet.open(folder);
    }
}
