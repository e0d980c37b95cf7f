package dev.memfit;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One configuration style: in the layers below the trainers, a public static or constructor takes at most three
 * arguments; more settings make a builder ({@code setX}, {@code optX}, a terminal call). memfit-notebook's
 * {@code dev.memfit.synthetic} is held to the same rule by its own test, through {@link #positionalCalls}.
 */
public class ConfigurationStyleTest {

    private static final List<String> LAYERS = List.of("io", "source", "sample", "shard", "prep");

    /** Left positional on purpose, each with its reason (records' canonical constructors are skipped anyway). */
    private static final Set<String> ALLOWED = Set.of(
            // the trainers (dev.memfit.train, rewritten elsewhere) allocate through it; a builder can replace it then
            "dev.memfit.source.ArraySource.allocate",
            // plumbing the two AnnData readers (io.hdf5.H5ad, io.zarr.ZarrAnnData) share across their packages, public
            // only for that: no user configures them
            "dev.memfit.io.anndata.CscTranspose",
            "dev.memfit.io.anndata.AnnDataColumns.checkLength",
            "dev.memfit.io.anndata.AnnDataColumns.categorical",
            "dev.memfit.io.anndata.AnnDataColumns.nullable");

    @Test
    void publicStaticsAndConstructorsTakeAtMostThreeArguments() throws IOException, URISyntaxException {
        List<String> positional = positionalCalls(DType.class, LAYERS);
        assertTrue(positional.isEmpty(), "make these builders:\n" + String.join("\n", positional));
    }

    /**
     * The public statics and constructors of more than three arguments (records' canonical constructors and
     * {@link #ALLOWED} aside) of each layer {@code dev/memfit/<layer>} in the class folder that holds {@code anchor}
     * (its module's target/classes under Surefire); fails if a layer has no classes there, so none passes unread.
     */
    public static List<String> positionalCalls(Class<?> anchor, List<String> layers) throws IOException, URISyntaxException {
        Path root = Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> positional = new ArrayList<>();
        for (String layer : layers) {
            try (Stream<Path> files = Files.walk(root.resolve("dev/memfit/" + layer))) {
                List<Path> classes = files.filter(f -> f.toString().endsWith(".class")).toList();
                assertTrue(!classes.isEmpty(), "no classes of dev.memfit." + layer + " under " + root);
                for (Path file : classes) {
                    String name = root.relativize(file).toString().replace('/', '.').replaceAll("\\.class$", "");
                    Class<?> type;
                    try {
                        type = Class.forName(name, false, anchor.getClassLoader());
                    } catch (ClassNotFoundException e) {
                        throw new AssertionError(e);
                    }
                    if (!isPublic(type)) {
                        continue;
                    }
                    List<Executable> calls = new ArrayList<>(Arrays.asList(type.getDeclaredConstructors()));
                    for (Method method : type.getDeclaredMethods()) {
                        if (Modifier.isStatic(method.getModifiers()) && !method.isSynthetic()) {
                            calls.add(method);
                        }
                    }
                    for (Executable call : calls) {
                        String id = type.getName().replace('$', '.') + (call instanceof Constructor<?> ? "" : "." + call.getName());
                        if (Modifier.isPublic(call.getModifiers()) && call.getParameterCount() > 3 && !canonical(type, call)
                                && !ALLOWED.contains(id)) {
                            positional.add(id + Arrays.toString(call.getParameterTypes()));
                        }
                    }
                }
            }
        }
        return positional;
    }

    private static boolean isPublic(Class<?> type) {
        for (Class<?> t = type; t != null; t = t.getDeclaringClass()) {
            if (!Modifier.isPublic(t.getModifiers())) {
                return false;
            }
        }
        return !type.isAnonymousClass() && !type.isSynthetic();
    }

    private static boolean canonical(Class<?> type, Executable call) {
        return type.isRecord() && call instanceof Constructor<?>
                && Arrays.equals(call.getParameterTypes(),
                Arrays.stream(type.getRecordComponents()).map(c -> c.getType()).toArray(Class<?>[]::new));
    }
}
