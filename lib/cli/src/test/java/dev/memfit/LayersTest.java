package dev.memfit;

import dev.memfit.bench.SlowStorage;
import dev.memfit.cli.Main;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.constantpool.ClassEntry;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Keeps the layers of ARCHITECTURE.md: read from the compiled classes (every class a class file refers to, so a
 * fully qualified name in code counts as much as an import), each package of the library refers only to packages
 * below it, and the library refers to none of the modules built on it (bench, cli, nd4j, spark). memfit-notebook's
 * packages (synthetic data, scores, charts) use only the library and the notebook packages below them.
 */
class LayersTest {

    /** The library's packages, bottom first: each may use itself and the packages before it, never one after it. */
    static final List<String> LAYERS = List.of(
            "dev.memfit",               // exceptions, DType, the native-memory ledger, pinned memory, parameters, progress
            "dev.memfit.io.storage",    // bytes of files: positional, mapped, page cache, atomic writes
            "dev.memfit.io.codec",      // decoders of compressed chunks shared by the formats (zlib through libdeflate)
            "dev.memfit.io.cloud",      // objects in s3:// and gs:// buckets through a verified local cache
            "dev.memfit.io.anndata",    // AnnData read out of core whatever holds it; FrameColumn, CscTranspose
            "dev.memfit.io.npy",
            "dev.memfit.io.mrc",
            "dev.memfit.io.hdf5",
            "dev.memfit.io.zarr",       // zarr v2 stores (AnnData .zarr, .zarr.zip) over a Storage
            "dev.memfit.io",            // Formats: one door to every file format
            "dev.memfit.sample",        // which samples an epoch visits
            "dev.memfit.source",        // random access to samples
            "dev.memfit.shard",
            "dev.memfit.data",          // Loader, Batch, Datasets: the one batch pipeline
            "dev.memfit.prep",
            "dev.memfit.memory",
            "dev.memfit.train");

    /**
     * memfit-notebook's packages, bottom first: each may use the library's packages, itself and the packages before it
     * here. Synthetic data and scores were the library's top layers; they moved here, so the library holds neither.
     */
    static final List<String> NOTEBOOK_LAYERS = List.of(
            "dev.memfit.synthetic",     // corpora, particles, atlases with known answers; resampling a file
            "dev.memfit.eval",          // topic recovery (Hungarian matching), latent-space separability
            "dev.memfit.plot");         // charts, tables, measurements, workspaces, lesson checks

    /** Modules built on the library; the library may not refer to them, nor bench to cli. */
    static final List<String> ABOVE_THE_LIBRARY = List.of("dev.memfit.cloud", "dev.memfit.plot", "dev.memfit.nd4j", "dev.memfit.bench",
            "dev.memfit.cli", "dev.memfit.spark");

    @Test
    void everyLibraryPackageUsesOnlyThePackagesBelowIt() {
        Map<String, TreeSet<String>> uses = packageDependencies(classRoot(DType.class));
        assertEquals(new TreeSet<>(LAYERS), new TreeSet<>(uses.keySet()),
                "every package of the library has its place in LAYERS (and ARCHITECTURE.md)");
        List<String> violations = new ArrayList<>();
        uses.forEach((from, targets) -> {
            int level = LAYERS.indexOf(from);
            for (String to : targets) {
                int target = LAYERS.indexOf(to);
                if (target > level) {
                    violations.add(from + " uses " + to + ", which is above it");
                } else if (target < 0) {
                    violations.add(from + " uses " + to + ", which is not part of the library");
                }
            }
        });
        assertTrue(violations.isEmpty(), String.join("\n", violations));
    }

    @Test
    void libraryCodeReportsProgressOnlyThroughAListener() {
        // Library code calls the ProgressListener it is given; drawing a bar is the console listener's business. So
        // does memfit-notebook's synthetic data (files many times the heap, written with a listener).
        List<Path> folders = new ArrayList<>();
        for (String layer : List.of("io", "sample", "source", "shard", "prep")) {
            folders.add(classRoot(DType.class).resolve("dev/memfit/" + layer));
        }
        folders.add(classRoot(dev.memfit.synthetic.SyntheticAtlas.class).resolve("dev/memfit/synthetic"));
        List<String> printing = new ArrayList<>();
        for (Path folder : folders) {
            TreeSet<String> scanned = new TreeSet<>();
            forEachClassReference(folder, (from, to) -> {
                scanned.add(from);
                if (to.equals("dev/memfit/Progress") || to.startsWith("me/tongfei/")) {
                    printing.add(from + " uses " + to);
                }
            });
            assertTrue(!scanned.isEmpty(), "no classes under " + folder.toUri() + ": the check would pass unread");
        }
        assertTrue(printing.isEmpty(), String.join("\n", printing));
    }

    @Test
    void sparkStaysOffTheLibraryAndTheCommandLinesClassPath() {
        // lib/spark is opt-in: the library refers to no Spark class, and the CLI's (and the kernel's) class path, which
        // this test runs on, holds none; ./memfit adds lib/spark's class path for --engine spark only
        assertTheLibraryRefersToNone("org/apache/spark/", "dev/memfit/spark/");
        for (String name : List.of("org.apache.spark.SparkContext", "dev.memfit.spark.SparkShards")) {
            assertThrows(ClassNotFoundException.class, () -> Class.forName(name, false, getClass().getClassLoader()),
                    name + " is on the CLI's class path");
        }
    }

    @Test
    void chartsSyntheticDataAndScoresLiveInTheNotebookModuleNotTheLibrary() {
        // a class of these packages in the library refers to itself, so this also finds one moved back
        assertTheLibraryRefersToNone("org/knowm/xchart/", "dev/memfit/plot/", "dev/memfit/synthetic/", "dev/memfit/eval/");
        for (Class<?> member : List.of(dev.memfit.synthetic.SyntheticAtlas.class, dev.memfit.eval.TopicRecovery.class)) {
            assertEquals(dev.memfit.plot.Charts.class.getProtectionDomain().getCodeSource().getLocation(),
                    member.getProtectionDomain().getCodeSource().getLocation(),
                    member.getName() + " ships in memfit-notebook");
        }
    }

    @Test
    void theNotebookModulesPackagesUseOnlyTheLibraryAndThePackagesBelowThem() {
        Map<String, TreeSet<String>> uses = packageDependencies(classRoot(dev.memfit.plot.Charts.class));
        assertEquals(new TreeSet<>(NOTEBOOK_LAYERS), new TreeSet<>(uses.keySet()),
                "memfit-notebook holds these packages, each with its place in NOTEBOOK_LAYERS (and ARCHITECTURE.md)");
        List<String> violations = new ArrayList<>();
        uses.forEach((from, targets) -> {
            int level = NOTEBOOK_LAYERS.indexOf(from);
            for (String to : targets) {
                int target = NOTEBOOK_LAYERS.indexOf(to);
                if (target > level) {
                    violations.add(from + " uses " + to + ", which is above it");
                } else if (target < 0 && !LAYERS.contains(to)) {
                    violations.add(from + " uses " + to + ", which is neither the library nor memfit-notebook");
                }
            }
        });
        assertTrue(violations.isEmpty(), String.join("\n", violations));
    }

    @Test
    void theAwsSdkStaysInMemfitCloud() {
        assertTheLibraryRefersToNone("software/amazon/", "dev/memfit/cloud/");
        assertAModuleOfOnePackageUsesOnlyTheLibrary(dev.memfit.cloud.BlockCache.class, "memfit-cloud");
    }

    /** Fails naming each reference from a library class to a class whose internal name starts with a prefix. */
    private static void assertTheLibraryRefersToNone(String... prefixes) {
        List<String> found = new ArrayList<>();
        forEachClassReference(classRoot(DType.class), (from, to) -> {
            for (String prefix : prefixes) {
                if (to.startsWith(prefix)) {
                    found.add(from + " uses " + to);
                }
            }
        });
        assertTrue(found.isEmpty(), String.join("\n", found));
    }

    /** A module built on the library holds the one package of {@code member} and uses no memfit package above the library. */
    private static void assertAModuleOfOnePackageUsesOnlyTheLibrary(Class<?> member, String module) {
        String onlyPackage = member.getPackageName();
        Map<String, TreeSet<String>> uses = packageDependencies(classRoot(member));
        assertEquals(java.util.Set.of(onlyPackage), uses.keySet(), module + " holds " + onlyPackage + " alone");
        uses.get(onlyPackage).forEach(to -> assertTrue(LAYERS.contains(to), onlyPackage + " uses " + to
                + ", which is not part of the library"));
    }

    @Test
    void benchDoesNotUseTheCommandLine() {
        Map<String, TreeSet<String>> uses = packageDependencies(classRoot(SlowStorage.class));
        uses.values().forEach(targets -> assertTrue(targets.stream().noneMatch(to -> to.startsWith("dev.memfit.cli")),
                "bench uses " + targets));
        assertTrue(uses.containsKey("dev.memfit.bench"));
    }

    @Test
    void theScanSeesUpwardReferences() {
        // The command line uses the library and bench: the same reading must find those edges.
        Map<String, TreeSet<String>> uses = packageDependencies(classRoot(Main.class));
        assertTrue(uses.get("dev.memfit.cli").containsAll(List.of("dev.memfit.bench", "dev.memfit.data", "dev.memfit.io.npy")),
                uses.toString());
    }

    /** Package to the memfit packages its classes refer to (itself excluded). */
    static Map<String, TreeSet<String>> packageDependencies(Path root) {
        Map<String, TreeSet<String>> uses = new TreeMap<>();
        forEachClassReference(root, (from, to) -> {
            String fromPackage = packageOf(from);
            String toPackage = packageOf(to);
            TreeSet<String> targets = uses.computeIfAbsent(fromPackage, k -> new TreeSet<>());
            if (toPackage.startsWith("dev.memfit") && !toPackage.equals(fromPackage)) {
                targets.add(toPackage);
            }
        });
        uses.keySet().removeIf(pkg -> !pkg.startsWith("dev.memfit"));
        return uses;
    }

    /** Calls back with (class, class it refers to) for every class reference in every class file under a folder. */
    static void forEachClassReference(Path root, BiConsumer<String, String> reference) {
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.filter(p -> p.toString().endsWith(".class")).toList()) {
                ClassModel model = ClassFile.of().parse(file);
                String from = model.thisClass().asInternalName();
                reference.accept(from, from);
                model.constantPool().forEach(entry -> {
                    if (entry instanceof ClassEntry type) {
                        // array descriptors ([[Ldev/memfit/X;) name their element class
                        reference.accept(from, type.asInternalName().replaceFirst("^\\[*L?", "").replace(";", ""));
                    }
                });
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String packageOf(String internalName) {
        int slash = internalName.lastIndexOf('/');
        return slash < 0 ? "" : internalName.substring(0, slash).replace('/', '.');
    }

    private static Path classRoot(Class<?> type) {
        try {
            Path location = Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (Files.isDirectory(location)) {
                return location;
            }
            return java.nio.file.FileSystems.newFileSystem(location).getPath("/");
        } catch (URISyntaxException | IOException e) {
            throw new IllegalStateException("cannot find the classes of " + type, e);
        }
    }
}
