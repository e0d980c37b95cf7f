package dev.memfit.eval;

/**
 * How well fitted topics recover known ones: mean cosine similarity after the optimal one-to-one topic matching.
 *
 * <p>1.0 is perfect recovery; independent random topics on many terms score near the cosine of two random
 * simplex vectors.
 */
public final class TopicRecovery {

    private TopicRecovery() {
    }

    /**
     * Scores fitted topic-term rows against true ones.
     *
     * @param fitted k rows of topic-term weights
     * @param truth k rows of true weights
     * @return the mean cosine similarity of optimally matched pairs
     */
    public static double score(float[][] fitted, float[][] truth) {
        return matchedSimilarities(fitted, truth).mean();
    }

    /**
     * The optimal matching and each matched pair's similarity.
     *
     * @param fitted k rows of topic-term weights
     * @param truth k rows of true weights
     * @return the matching
     */
    public static Matching matchedSimilarities(float[][] fitted, float[][] truth) {
        int k = truth.length;
        if (fitted.length != k) {
            throw new IllegalArgumentException(fitted.length + " fitted topics, " + k + " true topics");
        }
        double[][] similarity = new double[k][k];
        for (int i = 0; i < k; i++) {
            for (int j = 0; j < k; j++) {
                similarity[i][j] = cosine(truth[i], fitted[j]);
            }
        }
        int[] match = Hungarian.maximize(similarity);
        double[] matched = new double[k];
        for (int i = 0; i < k; i++) {
            matched[i] = similarity[i][match[i]];
        }
        return new Matching(match, matched);
    }

    static double cosine(float[] a, float[] b) {
        double dot = 0;
        double na = 0;
        double nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += (double) a[i] * b[i];
            na += (double) a[i] * a[i];
            nb += (double) b[i] * b[i];
        }
        return na == 0 || nb == 0 ? 0 : dot / Math.sqrt(na * nb);
    }

    /**
     * The result of matching.
     *
     * @param fittedForTrue {@code fittedForTrue[t]} is the fitted topic matched to true topic {@code t}
     * @param similarities the cosine similarity of each matched pair, by true topic
     */
    public record Matching(int[] fittedForTrue, double[] similarities) {

        /**
         * The mean similarity.
         *
         * @return the recovery score
         */
        public double mean() {
            double sum = 0;
            for (double s : similarities) {
                sum += s;
            }
            return sum / similarities.length;
        }
    }
}
