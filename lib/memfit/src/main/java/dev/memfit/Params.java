package dev.memfit;

import java.util.Locale;

/**
 * Sizes and settings of notebooks and commands, read from system properties and the environment.
 *
 * <p>A parameter {@code rows} is looked up as the system property {@code memfit.rows}, then as the environment variable
 * {@code MEMFIT_ROWS}. When neither is set, the default applies; when {@code MEMFIT_SMALL=1} (or
 * {@code -Dmemfit.small=true}) is set, the small default applies instead, which is how CI runs every notebook quickly.
 */
public final class Params {

    private Params() {
    }

    /**
     * Whether the small sizes are requested ({@code memfit.small} / {@code MEMFIT_SMALL}).
     *
     * @return true in CI-sized runs
     */
    public static boolean small() {
        String value = raw("small");
        return value != null && (value.equals("1") || value.equalsIgnoreCase("true") || value.equalsIgnoreCase("yes"));
    }

    /**
     * A long parameter.
     *
     * @param name the parameter's name, such as {@code rows}
     * @param normal the default on a workstation
     * @param small the default in a small (CI) run
     * @return the configured value, or the applicable default
     */
    public static long size(String name, long normal, long small) {
        String value = raw(name);
        if (value == null) {
            return small() ? small : normal;
        }
        try {
            return parseSize(value);
        } catch (NumberFormatException e) {
            throw new MemfitException("parameter " + name + ": expected a whole number (e.g. 200000 or 2_000), found '" + value + "'");
        }
    }

    /**
     * An integer parameter.
     *
     * @param name the parameter's name
     * @param normal the default on a workstation
     * @param small the default in a small (CI) run
     * @return the configured value, or the applicable default
     */
    public static int integer(String name, int normal, int small) {
        return Math.toIntExact(size(name, normal, small));
    }

    /**
     * A string parameter.
     *
     * @param name the parameter's name
     * @param fallback the value when unset
     * @return the configured value, or the fallback
     */
    public static String string(String name, String fallback) {
        String value = raw(name);
        return value == null ? fallback : value;
    }

    private static long parseSize(String value) {
        return Long.parseLong(value.replace("_", "").trim());
    }

    private static String raw(String name) {
        String property = System.getProperty("memfit." + name);
        if (property != null && !property.isBlank()) {
            return property;
        }
        String env = System.getenv("MEMFIT_" + name.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_'));
        return env == null || env.isBlank() ? null : env;
    }
}
