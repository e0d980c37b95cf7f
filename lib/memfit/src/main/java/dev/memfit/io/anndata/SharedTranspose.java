package dev.memfit.io.anndata;

import dev.memfit.NativeMemory;
import dev.memfit.ProgressListener;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HashMap;
import java.util.Map;

/**
 * The CSR transpose of one CSC matrix, shared by every {@link AnnData} reader open on it in this process (a stream
 * opens one reader per thread; they transpose once between them), made when rows are first read and deleted when the
 * last of them closes. Keyed by what identifies the store and the matrix: for a local file or folder its real path,
 * size and modification time (a file rewritten in place is transposed again), for a store in a bucket its address.
 * Nothing is kept across processes.
 *
 * <p>The transposed files are unlinked as soon as they are mapped where the system allows it (Linux, macOS): the
 * disk space comes back when the mapping goes, and nothing is left behind by a process that dies; elsewhere they are
 * deleted at the last close.
 */
public final class SharedTranspose {

    private record Key(String store, String matrix) {
    }

    private static final Map<Key, SharedTranspose> OPEN = new HashMap<>();

    private final Key key;
    private int users;
    private volatile CscTranspose.Rows rows;
    private Arena arena;
    private Path folder;
    private NativeMemory.Reservation reservation;

    private SharedTranspose(Key key) {
        this.key = key;
    }

    /**
     * The transpose of a matrix of a local file or folder, to be released by each caller.
     *
     * @param file the {@code .h5ad}, {@code .zarr} folder or {@code .zarr.zip}
     * @param matrix the CSC matrix in it, such as {@code X} or {@code layers/counts}
     * @return the shared entry
     */
    public static SharedTranspose acquire(Path file, String matrix) {
        try {
            BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
            return acquire(file.toRealPath() + " (" + attributes.size() + " bytes, modified " + attributes.lastModifiedTime()
                    + ")", matrix);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the attributes of " + file, e);
        }
    }

    /**
     * The transpose of a matrix of a store named by a text that identifies its contents (such as a bucket address),
     * to be released by each caller.
     *
     * @param store what identifies the store and its version
     * @param matrix the CSC matrix in it
     * @return the shared entry
     */
    public static SharedTranspose acquire(String store, String matrix) {
        Key key = new Key(store, matrix);
        synchronized (OPEN) {
            SharedTranspose entry = OPEN.computeIfAbsent(key, SharedTranspose::new);
            entry.users++;
            return entry;
        }
    }

    /**
     * The rows when transposed already.
     *
     * @return the rows, or null
     */
    public CscTranspose.Rows ready() {
        return rows;
    }

    /**
     * The rows, transposed now by the first caller (the others wait for it).
     *
     * @param transpose the work, used by the first caller only
     * @param scratch the folder under which the transpose gets a folder of its own
     * @param listener where the first caller's progress goes
     * @return the rows, valid until the last {@link #release}
     */
    public CscTranspose.Rows rows(CscTranspose transpose, Path scratch, ProgressListener listener) {
        CscTranspose.Rows done = rows;
        if (done != null) {
            return done;
        }
        synchronized (this) {
            if (rows == null) {
                Arena mapped = Arena.ofShared();
                Path own = null;
                try {
                    Files.createDirectories(scratch);
                    own = Files.createTempDirectory(scratch, "memfit-csc-");
                    CscTranspose.Rows made = transpose.run(own, mapped, listener);
                    reservation = NativeMemory.MAPPED.reserve(made.values().byteSize() + made.columns().byteSize());
                    try {
                        CscTranspose.delete(own);
                        own = null;
                    } catch (UncheckedIOException e) {
                        // a system that refuses to delete mapped files: deleted at the last release instead
                    }
                    arena = mapped;
                    folder = own;
                    rows = made;
                } catch (IOException e) {
                    mapped.close();
                    throw new UncheckedIOException("cannot create a transpose folder under " + scratch
                            + "; give another scratch folder (-Dmemfit.scratch=DIR)", e);
                } catch (RuntimeException | Error e) {
                    mapped.close();
                    if (own != null) {
                        CscTranspose.delete(own);
                    }
                    throw e;
                }
            }
            return rows;
        }
    }

    /** Gives up one caller's use; the last one unmaps and deletes the transpose. */
    public void release() {
        synchronized (OPEN) {
            if (--users > 0) {
                return;
            }
            OPEN.remove(key);
        }
        synchronized (this) {
            if (arena != null) {
                arena.close();
                reservation.close();
                arena = null;
                rows = null;
            }
            if (folder != null) {
                CscTranspose.delete(folder);
                folder = null;
            }
        }
    }
}
