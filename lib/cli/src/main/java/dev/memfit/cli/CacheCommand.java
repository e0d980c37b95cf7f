package dev.memfit.cli;

import dev.memfit.cloud.BlockCache;
import dev.memfit.cloud.CacheFolder;
import dev.memfit.io.cloud.ObjectCache;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code memfit cache ls|verify|clear}: the local cache of objects read from {@code s3://} and {@code gs://} buckets
 * ({@link ObjectCache}); reads only the folder, needs no credentials.
 */
@Command(name = "cache", mixinStandardHelpOptions = true,
        description = "The local cache of s3:// and gs:// objects (folder: --dir, else MEMFIT_CACHE_DIR, else "
                + "~/.cache/memfit/objects).",
        subcommands = {CacheCommand.Ls.class, CacheCommand.Verify.class, CacheCommand.Clear.class})
final class CacheCommand implements Runnable {

    @picocli.CommandLine.Spec
    private picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** The folder option every subcommand takes. */
    static final class FolderOption {
        @Option(names = "--dir", paramLabel = "FOLDER",
                description = "the cache folder (default: MEMFIT_CACHE_DIR, else ~/.cache/memfit/objects)")
        Path dir;

        CacheFolder folder() {
            return CacheFolder.of(dir != null ? dir : BlockCache.defaultFolder(System.getenv()));
        }
    }

    /** {@code memfit cache ls}. */
    @Command(name = "ls", mixinStandardHelpOptions = true,
            description = "List the cached objects: URI, ETag, size, cached bytes, blocks, last use (most recent first).")
    static final class Ls implements Callable<Integer> {

        @picocli.CommandLine.Mixin
        private FolderOption option = new FolderOption();

        @Override
        public Integer call() {
            CacheFolder folder = option.folder();
            List<CacheFolder.Entry> entries = folder.entries();
            System.out.println("cache " + folder.folder() + ": " + entries.size() + " objects, "
                    + mib(entries.stream().mapToLong(CacheFolder.Entry::cachedBytes).sum()) + " cached");
            if (entries.isEmpty()) {
                return 0;
            }
            DateTimeFormatter time = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss").withZone(ZoneId.systemDefault());
            System.out.printf("%-48s %-36s %14s %14s %7s %-19s%n", "URI", "ETAG", "SIZE", "CACHED", "BLOCKS", "LAST USE");
            for (CacheFolder.Entry entry : entries) {
                System.out.printf("%-48s %-36s %14d %14d %7s %-19s%n", entry.uri(), entry.etag(), entry.size(),
                        entry.cachedBytes(), entry.blocks() + (entry.staged() ? "+obj" : ""),
                        time.format(entry.lastUsed()));
            }
            return 0;
        }
    }

    /** {@code memfit cache verify}. */
    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = "Check every cached block against its CRC32C (and staged objects against their MD5); "
                    + "bad ones are removed, so the next read fetches them again.")
    static final class Verify implements Callable<Integer> {

        @picocli.CommandLine.Mixin
        private FolderOption option = new FolderOption();

        @Option(names = "--report-only", description = "list the bad files without removing them (exit status 1 when any)")
        private boolean reportOnly;

        @Override
        public Integer call() {
            CacheFolder folder = option.folder();
            CacheFolder.Verification result = folder.verify(!reportOnly);
            for (String bad : result.bad()) {
                System.out.println("BAD " + bad);
            }
            System.out.printf("cache %s: %d blocks and %d staged objects checked (%s), %d bad%s%n", folder.folder(),
                    result.blocksChecked(), result.stagedChecked(), mib(result.bytesChecked()), result.bad().size(),
                    result.bad().isEmpty() ? "" : reportOnly ? " (kept: --report-only)"
                            : " (removed: fetched again on the next read)");
            return reportOnly && !result.bad().isEmpty() ? 1 : 0;
        }
    }

    /** {@code memfit cache clear}. */
    @Command(name = "clear", mixinStandardHelpOptions = true,
            description = "Empty the cache (under its lock; downloads in progress elsewhere finish).")
    static final class Clear implements Callable<Integer> {

        @picocli.CommandLine.Mixin
        private FolderOption option = new FolderOption();

        @Override
        public Integer call() {
            CacheFolder folder = option.folder();
            long removed = folder.clear();
            System.out.println("cache " + folder.folder() + ": cleared, " + mib(removed) + " removed");
            return 0;
        }
    }

    private static String mib(long bytes) {
        return String.format("%.1f MiB", bytes / 1048576.0);
    }
}
