package dev.memfit.spark;

/**
 * The main class of {@code memfit-spark-<version>-submit.jar} for {@code spark-submit}: the commands of
 * {@code ./memfit shard|preprocess --engine spark}, on the session spark-submit configured (its {@code --master} and
 * {@code --conf}, unless the command's own {@code --master} and {@code --conf} say otherwise).
 *
 * <pre>{@code
 * spark-submit --master spark://host:7077 --class dev.memfit.spark.SubmitMain memfit-spark-0.1.0-submit.jar \
 *     shard /shared/atlas/*.h5ad --output-dir /shared/shards --shard-size 100000
 * }</pre>
 *
 * <p>Unlike {@link SparkMain#main}, it returns when the command succeeds (spark-submit then ends the application as
 * usual) and exits with the command's status only on failure, after printing memfit's message.
 */
public final class SubmitMain {

    private SubmitMain() {
    }

    /**
     * Runs {@code shard ...} or {@code preprocess ...} as {@code ./memfit} does with {@code --engine spark}.
     *
     * @param args the command and its options ({@code --help} lists them)
     */
    public static void main(String[] args) {
        int status = SparkMain.run(args);
        if (status != 0) {
            System.exit(status);
        }
    }
}
