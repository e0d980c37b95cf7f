package dev.memfit.io;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.hdf5.Hdf5;
import dev.memfit.io.hdf5.PackedFile;
import dev.memfit.io.mrc.MrcHeader;
import dev.memfit.io.mrc.ParticleStack;
import dev.memfit.io.npy.FileSet;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One door to every format memfit reads: what a path holds, found from its content and its name, described in the
 * same terms whatever the format (samples, shape of one sample, element type, bytes).
 *
 * <p>{@code Datasets.open(path)}, {@code ./memfit inspect} and {@code ./memfit estimate} all start here, so a format
 * is recognised the same way everywhere.
 */
public final class Formats {

    /** The name of the file that marks a folder of shards. */
    public static final String SHARD_METADATA = "shard_metadata.json";

    private Formats() {
    }

    /** The formats memfit reads. */
    public enum Format {
        /** A numpy {@code .npy} array; samples are its rows. */
        NPY("numpy .npy"),
        /** One MRC image stack ({@code .mrcs} or {@code .mrc}). */
        MRC("MRC image stack"),
        /** A {@code .txt} list of MRC stacks, one path per line. */
        STACK_LIST("list of MRC stacks"),
        /** A RELION {@code .star} file naming {@code index@stack} images. */
        STAR("RELION star"),
        /** A cryoSPARC {@code .cs} file: numpy records whose {@code blob/path} and {@code blob/idx} place each image. */
        CRYOSPARC("cryoSPARC .cs"),
        /** An AnnData {@code .h5ad} single-cell file; samples are cells. */
        H5AD("AnnData .h5ad"),
        /**
         * An AnnData zarr store: a {@code .zarr} folder (with a {@code .zgroup}) as anndata's {@code write_zarr} writes
         * it, or a {@code .zarr.zip} archive; samples are cells, read as from an {@code .h5ad}.
         */
        ANNDATA_ZARR("AnnData .zarr"),
        /** An HDF5 file written by {@code ./memfit pack}: {@code /samples} and {@code /names}. */
        PACKED_HDF5("packed HDF5"),
        /** A folder of {@code .npy} files, one sample each. */
        NPY_FOLDER("folder of .npy samples"),
        /** A folder of shards written by {@code ./memfit shard} (marked by {@value #SHARD_METADATA}). */
        SHARDS("shard folder");

        private final String description;

        Format(String description) {
            this.description = description;
        }

        /**
         * A short description for people, such as "numpy .npy".
         *
         * @return the description
         */
        public String description() {
            return description;
        }
    }

    /**
     * What a path holds, in the terms every format shares.
     *
     * @param path the file or folder
     * @param format its format
     * @param samples the number of samples (rows, images, cells)
     * @param sampleShape the shape of one sample
     * @param dtype the element type as stored (for {@code .h5ad}, the type of the stored values)
     * @param bytesOnDisk the bytes of every file it consists of
     * @param facts format-specific facts in display order (such as byte order, memory order, non-zero values)
     */
    public record DataFile(Path path, Format format, long samples, long[] sampleShape, DType dtype, long bytesOnDisk,
                           Map<String, Object> facts) {

        /**
         * The bytes of one sample when dense, in its stored element type.
         *
         * @return bytes per sample
         */
        public long sampleBytes() {
            long elements = 1;
            for (long dimension : sampleShape) {
                elements *= dimension;
            }
            return elements * dtype.byteSize();
        }
    }

    /**
     * Finds the format of a path from its content (magic bytes) and its name.
     *
     * @param path a file or folder
     * @return the format
     * @throws MemfitException when the path does not exist or is in no format memfit reads; the message lists them
     */
    public static Format detect(Path path) {
        if (!Files.exists(path)) {
            throw new MemfitException(path + ": no such file or folder");
        }
        if (Files.isDirectory(path)) {
            if (Files.exists(path.resolve(SHARD_METADATA))) {
                return Format.SHARDS;
            }
            String folder = path.getFileName() == null ? "" : path.getFileName().toString().toLowerCase(Locale.ROOT);
            if (Files.exists(path.resolve(".zgroup")) || Files.exists(path.resolve(".zarray"))) {
                return Format.ANNDATA_ZARR;
            }
            if (folder.endsWith(".zarr")) {
                // named as a store but without its marker: say what is missing, not "no samples"
                throw new InvalidFileException(path, -1, "a zarr v2 store (.zgroup at its root)",
                        Files.exists(path.resolve("zarr.json")) ? "a zarr v3 store (zarr.json), which memfit does not read"
                                : "a folder without .zgroup");
            }
            for (String extension : List.of(".npy", ".mrcs", ".mrc", ".star", ".cs", ".txt", ".h5ad", ".h5", ".hdf5")) {
                if (folder.endsWith(extension)) {
                    // a folder named like a file is a slip (a wrong path, an unpacked archive): say so, not "no samples"
                    throw new InvalidFileException(path, -1, "a " + extension + " file", "a directory");
                }
            }
            return Format.NPY_FOLDER;
        }
        // A known extension decides, so that a damaged file gets its own reader's precise error (file, offset,
        // expected, found); content decides for other names.
        String name = path.getFileName().toString().toLowerCase(Locale.ROOT);
        if (name.endsWith(".npy")) {
            return Format.NPY;
        }
        if (name.endsWith(".mrcs") || name.endsWith(".mrc")) {
            return Format.MRC;
        }
        if (name.endsWith(".star")) {
            return Format.STAR;
        }
        if (name.endsWith(".txt")) {
            return Format.STACK_LIST;
        }
        if (name.endsWith(".cs")) {
            return Format.CRYOSPARC;
        }
        if (name.endsWith(".h5ad")) {
            return Format.H5AD;
        }
        if (name.endsWith(".zip")) {
            return Format.ANNDATA_ZARR;
        }
        if (name.endsWith(".h5") || name.endsWith(".hdf5")) {
            return Format.PACKED_HDF5;
        }
        if (Npy.looksLikeNpy(path)) {
            return isCryoSparc(path) ? Format.CRYOSPARC : Format.NPY;
        }
        if (Hdf5.looksLikeHdf5(path)) {
            return Format.PACKED_HDF5;
        }
        if (name.endsWith(".npz")) {
            throw new MemfitException(path + ": expected one array (.npy), found an .npz (np.savez: a zip of several .npy "
                    + "arrays, compressed or not), which is not memory-mappable; save the array to train on with np.save "
                    + "(np.save('x.npy', np.load(path)['NAME'])) or unzip it: each member is an .npy");
        }
        throw new MemfitException(path + ": expected a format memfit reads (.npy, .mrcs/.mrc, a .txt list of stacks, "
                + ".star, a cryoSPARC .cs, .h5ad, an AnnData .zarr folder or .zarr.zip, an .h5 written by pack, a folder of "
                + ".npy samples or of shards), found a "
                + "file without the .npy or HDF5 signature or one of those extensions");
    }

    /** A file of numpy records with a {@code blob/path} field, whatever its name: a cryoSPARC particle file. */
    private static boolean isCryoSparc(Path path) {
        try {
            return Npy.readRecords(path).field("blob/path") != null;
        } catch (MemfitException e) {
            return false;   // not records (a plain .npy), or damaged: the .npy reader says why
        }
    }

    /**
     * Describes a {@code .npy} read through a storage, such as an object in a bucket through an object cache (its
     * path form, {@code s3:/bucket/key}): only the header's bytes are read.
     *
     * @param storage where the bytes come from
     * @param file the file or object
     * @return the description, as {@link #open} gives for a local {@code .npy}
     */
    public static DataFile openNpy(dev.memfit.io.storage.Storage storage, Path file) {
        return npy(file, Npy.readHeader(storage, file), storage.size(file));
    }

    private static DataFile npy(Path path, NpyHeader header, long bytes) {
        Map<String, Object> facts = new LinkedHashMap<>();
        long[] shape = header.shape();
        facts.put("format", "npy " + header.majorVersion() + ".0");
        facts.put("shape", shape);
        facts.put("dtype", header.dtype().name().toLowerCase(Locale.ROOT) + " (" + header.dtype().descr(header.byteOrder()) + ")");
        facts.put("byte_order", byteOrder(header.dtype(), header.byteOrder()));
        facts.put("memory_order", header.fortranOrder() ? "Fortran (column-major)" : "C (row-major)");
        facts.put("elements", header.elementCount());
        facts.put("data_offset", header.dataOffset());
        long samples = shape.length == 0 ? 1 : shape[0];
        long[] sample = shape.length == 0 ? new long[0] : java.util.Arrays.copyOfRange(shape, 1, shape.length);
        return new DataFile(path, Format.NPY, samples, sample, header.dtype(), bytes, facts);
    }

    /**
     * Describes what a path holds: reads headers and metadata only, never the data.
     *
     * @param path a file or folder
     * @return the description
     * @throws MemfitException when the format is unknown or a header is invalid (naming the file and the position)
     */
    public static DataFile open(Path path) {
        Format format = detect(path);
        Map<String, Object> facts = new LinkedHashMap<>();
        return switch (format) {
            case NPY -> npy(path, Npy.readHeader(path), size(List.of(path)));
            case MRC, STACK_LIST, STAR, CRYOSPARC -> particles(path, null);
            case H5AD, ANNDATA_ZARR -> openAnnData(path, path, "X");
            case PACKED_HDF5 -> {
                PackedFile packed = PackedFile.open(path);
                facts.put("format", "HDF5 packed by memfit, /" + PackedFile.SAMPLES + " float32");
                facts.put("samples", packed.size());
                facts.put("sample_shape", packed.sampleShape());
                yield new DataFile(path, format, packed.size(), packed.sampleShape(), DType.FLOAT32, size(List.of(path)), facts);
            }
            case NPY_FOLDER -> {
                FileSet files = FileSet.open(path);
                facts.put("format", "folder of " + files.size() + " .npy samples");
                facts.put("samples", files.size());
                facts.put("sample_shape", files.sampleShape());
                facts.put("dtype", files.dtype().name().toLowerCase(Locale.ROOT));
                yield new DataFile(path, format, files.size(), files.sampleShape(), files.dtype(), size(files.files()), facts);
            }
            case SHARDS -> throw new MemfitException(path + ": a shard folder; open it with dev.memfit.shard.ShardStore "
                    + "or Datasets.shards(folder), which check its metadata and checksums");
        };
    }

    /**
     * Describes a particle stack, a {@code .txt} list of stacks, a RELION {@code .star} or a cryoSPARC {@code .cs}
     * file, from headers only (and a {@code .cs} file's path and index fields), its
     * relative stack names resolved as {@link ParticleStack#open(Path, Path)} resolves them; the facts say under which
     * folder ({@code stacks_under}).
     *
     * @param path the stack or listing
     * @param datadir the folder relative names point into (cryoDRGN's {@code --datadir}), or null to search the
     *        listing's folder and those above it
     * @return the description
     */
    public static DataFile particles(Path path, Path datadir) {
        Format format = detect(path);
        if (format != Format.MRC && format != Format.STACK_LIST && format != Format.STAR && format != Format.CRYOSPARC) {
            throw new MemfitException(path + ": expected a particle stack (.mrcs), a list of stacks (.txt), a RELION "
                    + ".star or a cryoSPARC .cs file, found " + format.description());
        }
        Map<String, Object> facts = new LinkedHashMap<>();
        ParticleStack stack = ParticleStack.open(path, datadir);
        boolean single = format == Format.MRC;
        MrcHeader header = stack.header(0);
        facts.put("format", single ? "MRC2014 mode " + MrcHeader.mode(header.dtype())
                : format.description() + ", " + stack.files().size() + " stack(s)");
        facts.put("images", stack.size());
        facts.put("image_shape", new long[]{stack.height(), stack.width()});
        facts.put("dtype", header.dtype().name().toLowerCase(Locale.ROOT));
        facts.put("byte_order", byteOrder(header.dtype(), header.byteOrder()));
        facts.put("voxel_size", header.voxelSize());
        if (single) {
            facts.put("extended_header", header.extendedHeaderBytes());
        }
        facts.put("image_bytes", stack.fileBytes());
        if (stack.stackRoot() != null) {
            facts.put("stacks_under", stack.stackRoot());
        }
        return new DataFile(path, format, stack.size(), new long[]{stack.height(), stack.width()}, header.dtype(),
                size(stack.files()), facts);
    }

    /**
     * Describes an {@code .h5ad} from its metadata, as {@link #open} does, for a local copy that stands for another
     * path, such as an object in a bucket staged into a local cache under a name of the cache's.
     *
     * @param file the local file
     * @param shownAs the path the description names (an object's path form {@code s3:/bucket/key}, or {@code file})
     * @return the description
     */
    public static DataFile openH5ad(Path file, Path shownAs) {
        return openH5ad(file, shownAs, "X");
    }

    /**
     * Describes one matrix of an {@code .h5ad} ({@code X}, {@code raw/X} or a layer, as
     * {@link H5ad.Builder#optLayer} names it) from its metadata; the facts list the file's other matrices.
     *
     * @param file the local file
     * @param shownAs the path the description names
     * @param layer the matrix described
     * @return the description
     */
    public static DataFile openH5ad(Path file, Path shownAs, String layer) {
        return openAnnData(file, shownAs, layer);
    }

    /**
     * Describes one matrix of a local AnnData file or store ({@code .h5ad}, {@code .zarr} folder, {@code .zarr.zip})
     * from its metadata, as {@link #open} does; the facts list its other matrices ({@code X}, {@code raw/X},
     * {@code layers/NAME}).
     *
     * @param file the local file or store
     * @param shownAs the path the description names (an object's path form for a staged copy, or {@code file})
     * @param layer the matrix described
     * @return the description
     */
    public static DataFile openAnnData(Path file, Path shownAs, String layer) {
        try (AnnData data = AnnDataFiles.builder().setFile(file).optLayer(layer).open()) {
            return describe(data, shownAs, AnnDataFiles.isZarr(file) && Files.isDirectory(file)
                    ? AnnDataFiles.version(file).bytes() : size(List.of(file)));
        }
    }

    /**
     * Describes one matrix of an AnnData zarr store read through a storage, such as a store in a bucket through an
     * object cache ({@code s3:/bucket/atlas.zarr}): from its metadata, chunk by chunk, never staged whole. The bytes
     * on disk are the archive's for a {@code .zarr.zip}, and those of the described matrix's chunks for a folder
     * (whose keys a bucket does not list).
     *
     * @param storage where the bytes come from, left open
     * @param store the store's path in it
     * @param layer the matrix described
     * @return the description
     */
    public static DataFile openAnnData(dev.memfit.io.storage.Storage storage, Path store, String layer) {
        try (dev.memfit.io.zarr.ZarrAnnData data = dev.memfit.io.zarr.ZarrAnnData.builder().setStore(store)
                .optStorage(storage).optLayer(layer).open()) {
            long bytes = data.store().bytes();
            return describe(data, store, bytes >= 0 ? bytes : data.matrixBytes());
        }
    }

    /** The facts {@code ./memfit inspect} shows of an open AnnData, the same for every format. */
    private static DataFile describe(AnnData data, Path shownAs, long bytes) {
        Map<String, Object> facts = new LinkedHashMap<>();
        String matrix = data.layer();
        facts.put("format", data.format() + ", " + matrix + " " + switch (data.layout()) {
            case CSR -> "CSR";
            case DENSE -> "dense";
            // rows of a CSC X cost a transpose: say so before anyone streams it
            case CSC -> String.format("CSC (transposed to CSR when rows are first read, %,d stored values)",
                    data.storedValues());
        });
        facts.put("x_layout", data.layout().toString());
        facts.put("dtype", data.storedType().name().toLowerCase(Locale.ROOT));
        facts.put("n_obs", data.observations());
        facts.put("n_vars", data.variables());
        if (data.sparse()) {
            facts.put("nnz", data.storedValues());
        } else {
            // the non-zero values of a dense X need a pass over it (./memfit inspect makes one); a header
            // read only knows that every value is stored
            facts.put("stored_values", data.storedValues());
        }
        Map<String, String> matrices = data.matrices();
        if (matrices.size() > 1) {
            // raw counts and layers a user may want instead (--layer / optLayer)
            facts.put("matrices", String.join("; ", matrices.entrySet().stream()
                    .map(entry -> entry.getKey() + ": " + entry.getValue()).toList()));
        }
        // every column read, so that a description is also a check: a damaged categorical fails here, not later
        facts.put("obs_columns", String.join(", ", data.frameColumns("obs").keySet()));
        Format format = data instanceof H5ad ? Format.H5AD : Format.ANNDATA_ZARR;
        return new DataFile(shownAs, format, data.observations(), new long[]{data.variables()}, DType.FLOAT32, bytes,
                facts);
    }

    private static String byteOrder(DType dtype, ByteOrder order) {
        return dtype.byteSize() == 1 ? "not applicable" : order == ByteOrder.LITTLE_ENDIAN ? "little-endian" : "big-endian";
    }

    private static long size(List<Path> files) {
        long bytes = 0;
        try {
            for (Path file : files) {
                bytes += Files.size(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes;
    }
}
