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
 * arguments; more settings make a builder ({@code setX}, {@code optX}, a terminal call).
 */
class ConfigurationStyleTest {

    private static final List<String> LAYERS = List.of("io", "source", "sample", "shard", "prep", "synthetic");

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
        Path root = Path.of(DType.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> positional = new ArrayList<>();
        for (String layer : LAYERS) {
            try (Stream<Path> files = Files.walk(root.resolve("dev/memfit/" + layer))) {
                for (Path file : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                    String name = root.relativize(file).toString().replace('/', '.').replaceAll("\\.class$", "");
                    Class<?> type;
                    try {
                        type = Class.forName(name, false, getClass().getClassLoader());
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
        assertTrue(positional.isEmpty(), "make these builders:\n" + String.join("\n", positional));
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
