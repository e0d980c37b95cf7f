package dev.memfit.io.cloud;

/**
 * Counters of an {@link ObjectCache} since it was created; subtract two snapshots ({@link #minus}) for one epoch.
 *
 * @param hits blocks served from the local cache
 * @param misses reads that went to the server: a block fetched, or an object's head read directly
 * @param bytesDownloaded bytes received from the server (resumed and retried transfers included)
 * @param bytesFromCache bytes copied out of verified cached blocks
 * @param secondsWaited time readers spent waiting for the server, summed over threads
 * @param requests GET and HEAD requests sent (each attempt of a retried request counts)
 * @param retries attempts that followed a failed one: server errors and throttling retried by the client, and cut
 *                transfers resumed from where they stopped
 * @param corruptBlocks cached blocks that failed their CRC32C check and were fetched again
 * @param evictedBlocks blocks removed to keep the cache under its size limit
 */
public record CacheStatistics(long hits, long misses, long bytesDownloaded, long bytesFromCache, double secondsWaited,
                              long requests, long retries, long corruptBlocks, long evictedBlocks) {

    /**
     * The counts since an earlier snapshot.
     *
     * @param earlier a snapshot taken before this one
     * @return the difference
     */
    public CacheStatistics minus(CacheStatistics earlier) {
        return new CacheStatistics(hits - earlier.hits, misses - earlier.misses,
                bytesDownloaded - earlier.bytesDownloaded, bytesFromCache - earlier.bytesFromCache,
                secondsWaited - earlier.secondsWaited, requests - earlier.requests, retries - earlier.retries,
                corruptBlocks - earlier.corruptBlocks, evictedBlocks - earlier.evictedBlocks);
    }

    /**
     * Hits over all block accesses.
     *
     * @return 0..1, or 0 when nothing was read
     */
    public double hitRate() {
        long all = hits + misses;
        return all == 0 ? 0 : (double) hits / all;
    }

    @Override
    public String toString() {
        return String.format("%d hits, %d misses (hit rate %.2f), %.1f MiB downloaded, %.1f MiB from the cache, "
                        + "%.2f s waited, %d requests, %d retries, %d corrupt blocks re-fetched, %d evicted",
                hits, misses, hitRate(), bytesDownloaded / 1048576.0, bytesFromCache / 1048576.0, secondsWaited,
                requests, retries, corruptBlocks, evictedBlocks);
    }
}
