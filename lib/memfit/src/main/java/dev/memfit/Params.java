package dev.memfit;

import java.util.Locale;

/**
 * Sizes and settings of notebooks and commands, read from system properties and the environment.
 *
 * <p>A parameter {@code rows} is looked up as the system property {@code memfit.rows}, then as the environment variable
 * {@code MEMFIT_ROWS}. When neither is set, the default of the size {@link Tier} applies: {@code MEMFIT_SIZE=small}
 * (CI and Binder: a 2 GB container with one core), {@code default} (a 16 GB laptop) or {@code large} (a workstation).
 * {@code MEMFIT_SMALL=1} (or {@code -Dmemfit.small=true}) is the older spelling of {@code MEMFIT_SIZE=small}.
 */
public final class Params {

    /** The size tier a notebook runs at, which picks the defaults of its parameters. */
    public enum Tier {
        /** CI and Binder: the whole notebook set in minutes in a 2 GB container, each effect still clearly visible. */
        SMALL,
        /** A 16 GB laptop. */
        DEFAULT,
        /** A workstation. */
        LARGE
    }

    private Params() {
    }

    /**
     * The size tier: {@code memfit.size} / {@code MEMFIT_SIZE} ({@code small}, {@code default} or {@code large}), or
     * {@code small} when {@code memfit.small} / {@code MEMFIT_SMALL} is set, else {@code default}.
     *
     * @return the tier
     * @throws MemfitException when the size names no tier
     */
    public static Tier tier() {
        String size = raw("size");
        if (size != null) {
            try {
                return Tier.valueOf(size.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new MemfitException("MEMFIT_SIZE (memfit.size): expected small, default or large, found '" + size + "'");
            }
        }
        String value = raw("small");
        boolean small = value != null && (value.equals("1") || value.equalsIgnoreCase("true") || value.equalsIgnoreCase("yes"));
        return small ? Tier.SMALL : Tier.DEFAULT;
    }

    /**
     * Whether the small tier is requested.
     *
     * @return true in CI- and Binder-sized runs
     */
    public static boolean small() {
        return tier() == Tier.SMALL;
    }

    /**
     * A long parameter with a default per tier.
     *
     * @param name the parameter's name, such as {@code cells}
     * @param small the default at the small tier
     * @param normal the default at the default tier
     * @param large the default at the large tier
     * @return the configured value, or the tier's default
     */
    public static long tiered(String name, long small, long normal, long large) {
        String value = raw(name);
        if (value == null) {
            return switch (tier()) {
                case SMALL -> small;
                case DEFAULT -> normal;
                case LARGE -> large;
            };
        }
        return parse(name, value);
    }

    /**
     * A long parameter.
     *
     * @param name the parameter's name, such as {@code rows}
     * @param normal the default at the default and large tiers
     * @param small the default at the small tier (CI, Binder)
     * @return the configured value, or the applicable default
     */
    public static long size(String name, long normal, long small) {
        return tiered(name, small, normal, normal);
    }

    private static long parse(String name, String value) {
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
     * An integer parameter with a default per tier.
     *
     * @param name the parameter's name
     * @param small the default at the small tier
     * @param normal the default at the default tier
     * @param large the default at the large tier
     * @return the configured value, or the tier's default
     */
    public static int tieredInt(String name, int small, int normal, int large) {
        return Math.toIntExact(tiered(name, small, normal, large));
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
