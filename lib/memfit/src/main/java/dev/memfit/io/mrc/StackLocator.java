package dev.memfit.io.mrc;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.io.storage.Storage;

import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Finds the stack files a particle listing names, the way RELION, cryoSPARC and cryoDRGN users expect.
 *
 * <p>RELION runs in the project folder and writes every path relative to it, also in the STAR files it writes inside
 * job folders ({@code Extract/job004/particles.star} names {@code Extract/job004/Micrographs/mic001.mrcs}); so does
 * cryoSPARC in the {@code .cs} files of its job folders ({@code J5/J5_particles.cs} names
 * {@code J3/extract/mic001_particles.mrc}), and an exported {@code .cs} names its stacks from its own folder. Without
 * a data folder, a relative name is therefore looked for under the listing's folder, then under each folder above it
 * (one of them is the project folder), then under the working folder (where RELION would resolve it). With a data
 * folder (cryoDRGN's {@code --datadir}), it is looked for there, then, as cryoDRGN does, by its file name alone in
 * that folder. The folder that resolved the last name is tried first for the next one, so a listing of thousands of
 * stacks costs one existence check per stack.
 */
final class StackLocator {

    /** At most this many folders are named in the message of a name found nowhere. */
    private static final int NAMED_FOLDERS = 12;

    private final Path listing;
    /** What a listing's entries are called in messages: lines of a text listing, rows of a {@code .cs}. */
    private final String unit;
    /** The program whose project folder relative names start from. */
    private final String program;
    private final Path datadir;
    private final Storage storage;
    private final List<Path> candidates;
    /** Each folder that resolved at least one name, in first-use order. */
    private final Set<Path> used = new LinkedHashSet<>();
    private Path last;
    /** Whether the listing is an object ({@code s3:/bucket/key}, a relative path) rather than a file read through a storage. */
    private final boolean inBucket;
    /** Why the storage last said an object is not there (a refused request rather than a missing key, say). */
    private String lastFailure;

    /**
     * Prepares the folders to search.
     *
     * @param listing the {@code .star}, {@code .cs} or {@code .txt} file (a local path, or {@code s3:/bucket/key})
     * @param datadir the folder relative names point into, or null to search the listing's folder and those above
     * @param storage where objects live, or null for local files
     */
    StackLocator(Path listing, Path datadir, Storage storage) {
        this.listing = listing;
        boolean cs = listing.getFileName() != null
                && listing.getFileName().toString().toLowerCase(java.util.Locale.ROOT).endsWith(".cs");
        this.unit = cs ? "row" : "line";
        this.program = cs ? "cryoSPARC" : "RELION";
        this.datadir = datadir;
        this.storage = storage;
        this.inBucket = storage != null && !listing.isAbsolute() && listing.getNameCount() >= 2;
        List<Path> folders = new ArrayList<>();
        if (datadir != null) {
            folders.add(storage == null ? datadir.toAbsolutePath().normalize() : datadir);
        } else if (storage != null) {
            // an object's folders, up to the bucket (s3:/bucket has two names); never the working folder
            for (Path folder = listing.getParent(); folder != null && folder.getNameCount() >= 2; folder = folder.getParent()) {
                folders.add(folder);
            }
        } else {
            for (Path folder = listing.toAbsolutePath().normalize().getParent(); folder != null; folder = folder.getParent()) {
                folders.add(folder);
            }
            Path working = Path.of("").toAbsolutePath().normalize();
            if (!folders.contains(working)) {
                folders.add(working);
            }
        }
        this.candidates = List.copyOf(folders);
    }

    /**
     * Finds the file a listing names.
     *
     * @param name the name as the listing writes it, absolute or relative
     * @param line the listing's line (or a {@code .cs} file's row) that names it, for messages
     * @return the existing file
     * @throws MemfitException one line naming the listing, the line and every folder tried, when it exists nowhere
     */
    Path locate(String name, long line) {
        Path named = parse(name, line);
        if (named.isAbsolute() && storage == null) {
            if (!Files.isRegularFile(named)) {
                throw new MemfitException(listing + " " + unit + " " + line + ": expected an existing stack, found no file " + named);
            }
            return named;
        }
        if (inBucket && !named.isAbsolute()) {
            // an object's relative name stays in the listing's bucket: '..' past the bucket would name another bucket
            // (s3:/other/...) or, past the scheme, a local path
            Path bucket = listing.subpath(0, Math.min(2, listing.getNameCount()));
            Path deepest = (candidates.isEmpty() ? bucket : candidates.getFirst()).resolve(named).normalize();
            if (!deepest.startsWith(bucket) || deepest.getNameCount() <= bucket.getNameCount()) {
                throw new MemfitException(listing + " " + unit + " " + line + ": expected a stack name inside the listing's "
                        + "bucket, found '" + name + "', which leaves it; name another bucket's stacks by their full "
                        + "address (s3://bucket/key) in a listing of their own");
            }
        }
        List<Path> tried = new ArrayList<>();
        if (last != null) {
            Path file = last.resolve(named).normalize();
            if (exists(file)) {
                return file;
            }
        }
        for (Path folder : candidates) {
            Path file = folder.resolve(named).normalize();
            if (inBucket && !named.isAbsolute() && !file.startsWith(listing.subpath(0, 2))) {
                continue;   // from a folder near the bucket's top, '..' would leave the bucket
            }
            tried.add(folder);
            if (!folder.equals(last) && exists(file)) {
                return found(folder, file);
            }
        }
        if (datadir != null && named.getNameCount() > 1) {
            // cryoDRGN's fallback: the stacks were moved into the data folder without their folders
            Path file = candidates.getFirst().resolve(named.getFileName());
            if (exists(file)) {
                return found(candidates.getFirst(), file);
            }
        }
        throw notFound(name, line, tried);
    }

    /**
     * Says which folders relative names were resolved against, and why, in a few words.
     *
     * @return a description such as {@code /data/project (2 folders above the listing; RELION names paths from its
     *         project folder)}, or null when no relative name was resolved
     */
    String description() {
        if (used.isEmpty()) {
            return null;
        }
        List<String> parts = new ArrayList<>();
        Path listingFolder = storage == null ? listing.toAbsolutePath().normalize().getParent() : listing.getParent();
        for (Path root : used) {
            String why;
            if (datadir != null) {
                why = "the data folder given";
            } else if (root.equals(listingFolder)) {
                why = "the listing's folder";
            } else if (listingFolder != null && listingFolder.startsWith(root)) {
                int up = listingFolder.getNameCount() - root.getNameCount();
                why = up + " folder" + (up == 1 ? "" : "s") + " above the listing; " + program + " names paths from its project folder";
            } else {
                why = "the working folder";
            }
            parts.add(root + " (" + why + ")");
        }
        return String.join("; ", parts);
    }

    private Path found(Path folder, Path file) {
        used.add(folder);
        last = folder;
        return file;
    }

    private Path parse(String name, long line) {
        try {
            return Path.of(name);
        } catch (InvalidPathException e) {
            throw new InvalidFileException(listing, -1, "on " + unit + " " + line + " a valid path", "'" + name + "' ("
                    + e.getReason() + ")");
        }
    }

    private boolean exists(Path file) {
        if (storage == null) {
            return Files.isRegularFile(file);
        }
        try {
            storage.size(file);
            return true;
        } catch (MemfitException e) {
            lastFailure = e.getMessage();
            return false;
        }
    }

    private MemfitException notFound(String name, long line, List<Path> tried) {
        List<String> named = new ArrayList<>();
        for (Path folder : tried.subList(0, Math.min(tried.size(), NAMED_FOLDERS))) {
            named.add(folder.toString());
        }
        if (tried.size() > NAMED_FOLDERS) {
            named.add("and " + (tried.size() - NAMED_FOLDERS) + " more");
        }
        String hint = datadir != null ? "; the file name alone was tried there too"
                : "; give the folder the names are relative to (the " + program + " project folder) with --datadir or optDataDir";
        return new MemfitException(listing + " " + unit + " " + line + ": expected an existing stack '" + name
                + "', found none under " + String.join(", ", named) + hint
                + (lastFailure == null ? "" : " (the storage said: " + lastFailure + ")"));
    }
}
