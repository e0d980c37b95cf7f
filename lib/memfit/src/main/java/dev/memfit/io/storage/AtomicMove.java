package dev.memfit.io.storage;

import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/** Gives a finished temporary file its final name: the last step of every write that must never be seen half-done. */
public final class AtomicMove {

    private AtomicMove() {
    }

    /**
     * Renames {@code temporary} to {@code target}, replacing it, atomically where the file system can (readers see
     * the old file or the new one, never a mix); a plain replacing move where it cannot.
     *
     * @param temporary the finished file
     * @param target its final name
     * @throws IOException when the move fails
     */
    public static void replace(Path temporary, Path target) throws IOException {
        try {
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING);
        }
    }
}
