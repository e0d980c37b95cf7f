package dev.memfit.io.hdf5;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/** What every HDF5 file shares, for the writer that makes them and the code that recognises them. */
public final class Hdf5 {

    private static final byte[] SIGNATURE = {(byte) 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

    private Hdf5() {
    }

    /**
     * The format signature at the start of the superblock.
     *
     * @return a copy of the 8 bytes
     */
    public static byte[] signature() {
        return SIGNATURE.clone();
    }

    /**
     * Whether a file starts with the HDF5 signature (at offset 0: files written by h5py, anndata and memfit have no
     * user block).
     *
     * @param file the file
     * @return true for an HDF5 file
     */
    public static boolean looksLikeHdf5(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            return Arrays.equals(in.readNBytes(SIGNATURE.length), SIGNATURE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }
}
