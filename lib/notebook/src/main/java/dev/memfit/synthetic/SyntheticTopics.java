package dev.memfit.synthetic;

import ai.djl.ndarray.types.Shape;
import dev.memfit.source.ArraySource;
import dev.memfit.DType;
import dev.memfit.MemfitException;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.AliasMethodDiscreteSampler;
import org.apache.commons.rng.sampling.distribution.DirichletSampler;
import org.apache.commons.rng.sampling.distribution.DiscreteSampler;
import org.apache.commons.rng.sampling.distribution.PoissonSampler;
import org.apache.commons.rng.simple.RandomSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Documents x terms count matrices drawn from known topics, for checking that a topic model recovers them.
 *
 * <p>Like tinytopics' {@code generate_synthetic_data}: topic-term rows F ~ Dirichlet(termConcentration), document-topic
 * rows L ~ Dirichlet(topicConcentration), document lengths ~ Poisson(avgDocLength), and the words of document i
 * drawn from (L F)[i, :], so that X[i, j] ~ Poisson(avgDocLength * (L F)[i, j]) independently (Poisson splitting).
 * Counts are stored as float32 in native memory.
 */
public final class SyntheticTopics {

    private SyntheticTopics() {
    }

    /**
     * A generated corpus with its true factors.
     *
     * @param counts the documents x terms counts (float32), owned by the caller
     * @param trueL document-topic proportions, n x k
     * @param trueF topic-term distributions, k x m
     */
    public record Corpus(ArraySource counts, float[][] trueL, float[][] trueF) implements AutoCloseable {
        /** Frees the counts. */
        @Override
        public void close() {
            counts.close();
        }
    }

    /**
     * Starts configuring a corpus: {@code setDocuments}, {@code setTerms}, {@code setTopics} and
     * {@code setDocumentLength} are required; the concentrations default to 0.1 over terms and 0.5 over topics, the
     * seed to 1.
     *
     * <pre>{@code
     * try (SyntheticTopics.Corpus corpus = SyntheticTopics.builder().setDocuments(10_000).setTerms(500).setTopics(5)
     *         .setDocumentLength(300).optSeed(7).generate()) { ... }
     * }</pre>
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures a corpus; {@link #generate()} validates the settings and draws it. */
    public static final class Builder {

        private long documents;
        private int terms;
        private int topics;
        private double documentLength;
        private double termConcentration = 0.1;
        private double topicConcentration = 0.5;
        private long seed = 1;

        private Builder() {
        }

        /**
         * Sets the number of documents, n (required).
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder setDocuments(long count) {
            this.documents = count;
            return this;
        }

        /**
         * Sets the vocabulary size, m (required).
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder setTerms(int count) {
            this.terms = count;
            return this;
        }

        /**
         * Sets the number of topics, k (required).
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder setTopics(int count) {
            this.topics = count;
            return this;
        }

        /**
         * Sets the mean number of words per document (required).
         *
         * @param words positive
         * @return this builder
         */
        public Builder setDocumentLength(double words) {
            this.documentLength = words;
            return this;
        }

        /**
         * Sets the Dirichlet parameter of the topic-term rows (default 0.1; small: sparse, well separated topics).
         *
         * @param alpha positive
         * @return this builder
         */
        public Builder optTermConcentration(double alpha) {
            this.termConcentration = alpha;
            return this;
        }

        /**
         * Sets the Dirichlet parameter of the document-topic rows (default 0.5).
         *
         * @param alpha positive
         * @return this builder
         */
        public Builder optTopicConcentration(double alpha) {
            this.topicConcentration = alpha;
            return this;
        }

        /**
         * Sets the seed (default 1): the same settings draw the same corpus.
         *
         * @param value the seed
         * @return this builder
         */
        public Builder optSeed(long value) {
            this.seed = value;
            return this;
        }

        /**
         * Validates the settings and draws the corpus.
         *
         * @return the corpus, to be closed (its counts are in native memory)
         * @throws MemfitException naming the setting to change
         */
        public Corpus generate() {
            if (documents < 1 || documents > Integer.MAX_VALUE - 8) {
                throw new MemfitException("setDocuments(n) is required, with n from 1 to 2^31 - 9, got " + documents);
            }
            if (terms < 1) {
                throw new MemfitException("setTerms(m) is required, with m >= 1, got " + terms);
            }
            if (topics < 1) {
                throw new MemfitException("setTopics(k) is required, with k >= 1, got " + topics);
            }
            if (!(documentLength > 0)) {
                throw new MemfitException("setDocumentLength(words) is required and must be positive, got " + documentLength);
            }
            if (!(termConcentration > 0) || !(topicConcentration > 0)) {
                throw new MemfitException("the Dirichlet concentrations must be positive, got " + termConcentration
                        + " over terms and " + topicConcentration + " over topics");
            }
            return SyntheticTopics.generate(this);
        }
    }

    private static Corpus generate(Builder settings) {
        long documents = settings.documents;
        int terms = settings.terms;
        int topics = settings.topics;
        double avgDocLength = settings.documentLength;
        double termConcentration = settings.termConcentration;
        double topicConcentration = settings.topicConcentration;
        long seed = settings.seed;
        UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
        DirichletSampler topicTerms = DirichletSampler.symmetric(rng, terms, termConcentration);
        DirichletSampler docTopics = DirichletSampler.symmetric(rng, topics, topicConcentration);
        float[][] trueF = new float[topics][];
        for (int t = 0; t < topics; t++) {
            trueF[t] = toFloat(topicTerms.sample());
        }
        float[][] trueL = new float[Math.toIntExact(documents)][];
        ArraySource counts = ArraySource.allocate("synthetic topics " + documents + "x" + terms,
                documents, new Shape(terms), DType.FLOAT32);
        MemorySegment data = counts.data();
        DiscreteSampler lengths = PoissonSampler.of(rng, avgDocLength);
        double[] rate = new double[terms];
        for (int i = 0; i < documents; i++) {
            trueL[i] = toFloat(docTopics.sample());
            int length = lengths.sample();
            java.util.Arrays.fill(rate, 0);
            for (int t = 0; t < topics; t++) {
                double weight = trueL[i][t];
                float[] f = trueF[t];
                for (int j = 0; j < terms; j++) {
                    rate[j] += weight * f[j];
                }
            }
            long rowOffset = (long) i * terms * Float.BYTES;
            DiscreteSampler words = AliasMethodDiscreteSampler.of(rng, rate);
            for (int w = 0; w < length; w++) {
                long at = rowOffset + (long) words.sample() * Float.BYTES;
                data.set(ValueLayout.JAVA_FLOAT, at, data.get(ValueLayout.JAVA_FLOAT, at) + 1);
            }
        }
        return new Corpus(counts, trueL, trueF);
    }

    private static float[] toFloat(double[] values) {
        float[] result = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            result[i] = (float) values[i];
        }
        return result;
    }
}
