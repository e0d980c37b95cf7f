package dev.memfit.io.cloud;

import dev.memfit.MemfitException;

import java.nio.file.Path;
import java.util.Locale;

/**
 * The address of an object: {@code s3://bucket/key} or {@code gs://bucket/key}.
 *
 * <p>A {@link Path} cannot hold {@code //} (the file system folds it to one slash), so the path form of an object
 * is {@code s3:/bucket/key} ({@link #toPath()}); {@link #of(Path)} and {@link #parse} accept both forms, which is how
 * an object travels through code that takes paths, such as a {@link dev.memfit.io.storage.Storage}.
 *
 * @param scheme {@code s3} or {@code gs}
 * @param bucket the bucket
 * @param key the object's key (may be empty for a bucket-wide prefix)
 */
public record ObjectUri(String scheme, String bucket, String key) {

    /** Checks the parts. */
    public ObjectUri {
        if (!scheme.equals("s3") && !scheme.equals("gs")) {
            throw new MemfitException("object storage scheme \"" + scheme + "\" is not supported; use s3:// or gs://");
        }
        if (bucket.isEmpty() || bucket.contains("/")) {
            throw new MemfitException(scheme + "://" + bucket + "/" + key + ": expected a bucket name before the first "
                    + "slash, found \"" + bucket + "\"");
        }
    }

    /**
     * Whether a string names an object ({@code s3:} or {@code gs:} followed by one or two slashes).
     *
     * @param text a path or URI
     * @return true for an object address
     */
    public static boolean isObject(String text) {
        String lower = text.toLowerCase(Locale.ROOT);
        return lower.startsWith("s3:/") || lower.startsWith("gs:/");
    }

    /**
     * Parses {@code s3://bucket/key}, {@code gs://bucket/key} or the path form with one slash.
     *
     * @param text the address
     * @return the object
     * @throws MemfitException when the text is not an object address
     */
    public static ObjectUri parse(String text) {
        if (!isObject(text)) {
            throw new MemfitException("\"" + text + "\" is not an object address; expected s3://bucket/key or "
                    + "gs://bucket/key");
        }
        String scheme = text.substring(0, 2).toLowerCase(Locale.ROOT);
        String rest = text.substring(text.startsWith("//", 3) ? 5 : 4);
        int slash = rest.indexOf('/');
        return slash < 0 ? new ObjectUri(scheme, rest, "")
                : new ObjectUri(scheme, rest.substring(0, slash), rest.substring(slash + 1));
    }

    /**
     * The object a path stands for ({@link #toPath()} made it).
     *
     * @param path a path such as {@code s3:/bucket/key}
     * @return the object
     */
    public static ObjectUri of(Path path) {
        return parse(path.toString());
    }

    /**
     * This object as a path ({@code s3:/bucket/key}), to hand to code that takes paths and reads through a storage.
     *
     * @return the path form
     */
    public Path toPath() {
        return Path.of(scheme + ":/" + bucket + "/" + key);
    }

    /**
     * An object under this one, as a folder: {@code s3://b/data} resolve {@code x.npy} is {@code s3://b/data/x.npy}.
     *
     * @param name the relative key
     * @return the object
     */
    public ObjectUri resolve(String name) {
        return new ObjectUri(scheme, bucket, key.isEmpty() || key.endsWith("/") ? key + name : key + "/" + name);
    }

    @Override
    public String toString() {
        return scheme + "://" + bucket + "/" + key;
    }
}
