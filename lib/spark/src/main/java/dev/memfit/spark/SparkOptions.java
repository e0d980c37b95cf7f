package dev.memfit.spark;

import org.apache.spark.sql.SparkSession;

/**
 * The Spark settings of a run, declared once for every memfit job on Spark ({@link SparkShards},
 * {@link SparkPreprocess}): the session to run on, or the master and settings of a session the run starts and stops.
 *
 * @param <T> the builder
 */
public interface SparkOptions<T extends SparkOptions<T>> {

    /**
     * The settings these options write to; a builder keeps one.
     *
     * @return the builder's Spark settings
     */
    SparkSessions sparkSessions();

    /**
     * Sets the Spark master of a session this run starts (default: spark-submit's master, else {@code local[*]};
     * ignored when a session is active or given). A local master binds the driver to 127.0.0.1.
     *
     * @param url such as {@code local[2]} or {@code spark://host:7077}, or null for the default
     * @return this builder
     */
    default T optMaster(String url) {
        sparkSessions().master(url);
        return self();
    }

    /**
     * Sets the Spark session to run on (default: the active one, else a new one that is stopped at the end).
     *
     * @param session the session
     * @return this builder
     */
    default T optSession(SparkSession session) {
        sparkSessions().session(session);
        return self();
    }

    /**
     * Adds a Spark setting for a session this run starts.
     *
     * @param key such as {@code spark.ui.enabled}
     * @param value its value
     * @return this builder
     */
    default T addConfig(String key, String value) {
        sparkSessions().config(key, value);
        return self();
    }

    @SuppressWarnings("unchecked")
    private T self() {
        return (T) this;
    }
}
