package dev.memfit;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * What a training program that depends on the core alone does not get: charts and tables (memfit-notebook: XChart,
 * Tablesaw), the S3 client (memfit-cloud: the AWS SDK) and Spark (memfit-spark). This test runs on the core's own class path, so a dependency that creeps back into lib/memfit's
 * POM fails it.
 */
class CoreClassPathTest {

    @Test
    void chartsTablesTheAwsSdkAndSparkAreNotOnTheCoresClassPath() {
        for (String name : List.of("org.knowm.xchart.XYChart", "tech.tablesaw.api.Table",
                "dev.memfit.synthetic.SyntheticAtlas", "dev.memfit.eval.TopicRecovery",   // memfit-notebook's synthetic data and scores
                "software.amazon.awssdk.services.s3.S3Client", "dev.memfit.cloud.BlockCache", "dev.memfit.plot.Charts", "dev.memfit.plot.Lesson",
                "org.apache.spark.SparkContext")) {
            assertThrows(ClassNotFoundException.class, () -> Class.forName(name, false, getClass().getClassLoader()),
                    name + " is on the core's class path");
        }
    }
}
