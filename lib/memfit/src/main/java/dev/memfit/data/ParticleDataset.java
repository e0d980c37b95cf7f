package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.mrc.ParticleStack;
import dev.memfit.io.storage.Storage;

import java.nio.file.Path;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The first step of loading particle images from a {@code .mrcs}, a {@code .txt} list, a RELION {@code .star} or a
 * cryoSPARC {@code .cs}: where relative paths point, where bytes come from, then eager or lazy.
 *
 * <p>A listing in a bucket ({@code s3://bucket/particles.star}, {@link Datasets#particles(String)}) is read through an
 * {@link ObjectCache}, and so are its stacks, which relative names place under the listing's prefix: the listing and
 * the stacks' headers when the loader is built, then the images block by block as batches need them (each block
 * downloaded once with a range request, each piece checked against its CRC32C before it is served). By default the
 * cache is {@link ObjectCache#fromEnvironment()}, closed with the loader; {@link #optCache} shares one.
 */
public final class ParticleDataset extends RecordDataset {

    private final Path path;
    private final ObjectUri object;
    private Path datadir;
    private ObjectCache cache;
    /** The storage the index was opened through (objects only), handed to the loader next. */
    private Storage opened;

    ParticleDataset(Path path) {
        super(null);
        this.path = path;
        this.object = null;
    }

    ParticleDataset(ObjectUri object) {
        super(null);
        this.path = object.toPath();
        this.object = object;
        super.optStorage(this::takeOpened);
    }

    @Override
    RecordIndexSupplier indexSupplier() {
        if (object == null) {
            return () -> ParticleStack.open(path, datadir);
        }
        return () -> {
            Storage storage = cache == null ? ObjectCache.fromEnvironment() : new BorrowedStorage(cache);
            try {
                ParticleStack stack = ParticleStack.open(path, datadir, storage);
                opened = storage;
                return stack;
            } catch (RuntimeException e) {
                storage.close();
                throw e;
            }
        };
    }

    private Storage takeOpened() {
        Storage storage = opened;
        opened = null;
        if (storage == null) {
            throw new IllegalStateException("the listing of " + object + " was not opened before its storage");
        }
        return storage;
    }

    /**
     * Resolves relative stack paths against this folder (cryoDRGN's {@code --datadir}), then by their file names alone
     * there, instead of searching the listing's folder and the folders above it (a RELION project's).
     * For a listing in a bucket, give the folder as a path of the form {@code ObjectUri.parse("s3://b/p/").toPath()}.
     *
     * @param folder the folder
     * @return this step
     */
    public ParticleDataset optDataDir(Path folder) {
        this.datadir = folder;
        return this;
    }

    /**
     * Reads a listing in a bucket and its stacks through this cache instead of {@link ObjectCache#fromEnvironment()};
     * the loader does not close it.
     *
     * @param objects the cache
     * @return this step
     */
    public ParticleDataset optCache(ObjectCache objects) {
        if (object == null) {
            throw new MemfitException(path + ": optCache is for a listing in a bucket (s3://, gs://); local files are "
                    + "read directly");
        }
        this.cache = Objects.requireNonNull(objects, "cache; leave optCache out to use ObjectCache.fromEnvironment()");
        return this;
    }

    @Override
    public ParticleDataset optStorage(Supplier<Storage> supplier) {
        if (object != null) {
            throw new MemfitException(object + ": a listing in a bucket is read through its object cache; use "
                    + "optCache to choose the cache");
        }
        super.optStorage(supplier);
        return this;
    }

    @Override
    public ParticleDataset optProgress(dev.memfit.ProgressListener listener) {
        super.optProgress(listener);
        return this;
    }
}
