package dev.memfit.io.cloud;

/**
 * What a HEAD or LIST request tells about one version of an object.
 *
 * @param uri the object
 * @param size bytes
 * @param etag the entity tag without quotes: the MD5 of the bytes for a single-part upload, {@code MD5-N} for an
 *             object uploaded in N parts
 */
public record ObjectInfo(ObjectUri uri, long size, String etag) {

    /**
     * Whether the ETag is the MD5 of the object's bytes (32 hex digits), so a whole download can be checked
     * against it; false for multipart ETags ({@code ...-N}) and those of servers that use other tags.
     *
     * @return true when the ETag can check the bytes
     */
    public boolean etagIsMd5() {
        return etag.matches("[0-9a-fA-F]{32}");
    }
}
