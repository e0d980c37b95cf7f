package dev.memfit.io.cloud;

import dev.memfit.MemfitException;

/**
 * An object was replaced on the server while it was being read: the bytes already read belong to another version
 * than those still to come, so nothing more is read from it (the two versions are never mixed).
 */
public class ObjectChangedException extends MemfitException {

    /**
     * Creates the exception.
     *
     * @param uri the object
     * @param expectedEtag the ETag of the version being read
     * @param foundEtag the ETag the server has now, or null when it did not say
     */
    public ObjectChangedException(ObjectUri uri, String expectedEtag, String foundEtag) {
        super(uri + " changed on the server while it was being read (ETag \"" + expectedEtag + "\" when opened, "
                + (foundEtag == null || foundEtag.isEmpty() ? "another version now" : "\"" + foundEtag + "\" now")
                + "); start the epoch again to read the new version");
    }
}
