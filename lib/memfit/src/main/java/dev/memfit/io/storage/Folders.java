package dev.memfit.io.storage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Folder operations the JDK lacks. */
public final class Folders {

    private Folders() {
    }

    /**
     * Deletes a folder and everything below it, deepest first; nothing happens when it does not exist.
     *
     * @param folder the folder (or a single file)
     * @throws IOException when something cannot be deleted (what was deleted before stays deleted)
     */
    public static void deleteTree(Path folder) throws IOException {
        if (!Files.exists(folder)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(folder)) {
            for (Path path : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
