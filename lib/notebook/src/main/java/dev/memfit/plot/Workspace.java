package dev.memfit.plot;

import dev.memfit.Params;
import dev.memfit.io.storage.Folders;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where a notebook writes its files: a folder under {@code ../build/work} (the parameter {@code work} moves it),
 * kept between runs so that a second run can reuse what the first generated, or emptied when a run must start from
 * nothing.
 */
public final class Workspace {

    private Workspace() {
    }

    /**
     * The notebook's folder for this name, created if needed.
     *
     * @param name such as {@code "atlas-20000x500"}
     * @return the folder
     */
    public static Path folder(String name) {
        Path folder = Path.of(Params.string("work", "../build/work")).resolve(name);
        try {
            return Files.createDirectories(folder);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + folder, e);
        }
    }

    /**
     * A folder emptied (everything under it deleted) and created again: for work that must be timed from nothing.
     *
     * @param folder the folder
     * @return the folder, empty
     */
    public static Path fresh(Path folder) {
        try {
            Folders.deleteTree(folder);
            return Files.createDirectories(folder);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot empty and create " + folder, e);
        }
    }
}
