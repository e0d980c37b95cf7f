package dev.memfit.spark;

import dev.memfit.MemfitException;
import org.apache.spark.sql.SparkSession;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The Spark settings a run's builder holds ({@link SparkOptions} sets them: a master, a session, extra settings), and
 * the session a run uses: the given one, else the active one, else a new one the run stops.
 */
public final class SparkSessions {

    /** Null: spark-submit's master (the {@code spark.master} property it sets), else {@code local[*]}. */
    private String master;
    private SparkSession session;
    private final Map<String, String> config = new LinkedHashMap<>();

    SparkSessions() {
    }

    void master(String url) {
        this.master = url;
    }

    void session(SparkSession spark) {
        this.session = spark;
    }

    void config(String key, String value) {
        config.put(key, value);
    }

    /**
     * The extra settings for a session the run starts, in the order added.
     *
     * @return the settings, unmodifiable
     */
    public Map<String, String> config() {
        return java.util.Collections.unmodifiableMap(config);
    }

    /** Checks the settings at a builder's final call. */
    void check() {
        if (master != null && master.isBlank()) {
            throw new MemfitException("optMaster: give a Spark master such as local[2] (or optSession a running session)");
        }
    }

    /**
     * The session of a run; close it at the end (it stops a session this call started, and only that one).
     *
     * @param appName the name of a session started here
     * @return the session in use
     */
    Use use(String appName) {
        // the thread's active session, else the process's default one (started in another thread or notebook cell):
        // getOrCreate would return that one too, and this run must then not stop it
        SparkSession spark = session != null ? session : SparkSession.getActiveSession()
                .getOrElse(() -> SparkSession.getDefaultSession().getOrElse(() -> null));
        if (spark != null) {
            return new Use(spark, false);
        }
        return new Use(start(master != null ? master : System.getProperty("spark.master", "local[*]"), appName, config), true);
    }

    /**
     * A session in use by a run.
     *
     * @param spark the session
     * @param own whether the run started it, and so stops it when closed
     */
    record Use(SparkSession spark, boolean own) implements AutoCloseable {
        @Override
        public void close() {
            if (own) {
                spark.stop();
            }
        }
    }

    /**
     * Starts a Spark session: a local master binds to 127.0.0.1 (Spark picks a network interface otherwise); the
     * settings given are applied last.
     *
     * @param master the master URL
     * @param appName the application's name in Spark's UI and logs
     * @param config extra settings
     * @return the session
     */
    static SparkSession start(String master, String appName, Map<String, String> config) {
        SparkSession.Builder builder = SparkSession.builder().master(master).appName(appName);
        if (master.startsWith("local")) {
            builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1");
        }
        config.forEach(builder::config);
        return builder.getOrCreate();
    }
}
