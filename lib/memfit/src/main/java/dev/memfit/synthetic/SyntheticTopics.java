package dev.memfit.synthetic;

import ai.djl.ndarray.types.Shape;
import dev.memfit.source.ArraySource;
import dev.memfit.DType;
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
     * Generates a corpus with the default concentrations (0.1 over terms, 0.5 over topics).
     *
     * @param documents n
     * @param terms m
     * @param topics k
     * @param avgDocLength mean words per document
     * @param seed the seed
     * @return the corpus
     */
    public static Corpus generate(long documents, int terms, int topics, double avgDocLength, long seed) {
        return generate(documents, terms, topics, avgDocLength, 0.1, 0.5, seed);
    }

    /**
     * Generates a corpus.
     *
     * @param documents n
     * @param terms m
     * @param topics k
     * @param avgDocLength mean words per document
     * @param termConcentration Dirichlet parameter of topic-term rows (small: sparse, well separated topics)
     * @param topicConcentration Dirichlet parameter of document-topic rows
     * @param seed the seed
     * @return the corpus
     */
    public static Corpus generate(long documents, int terms, int topics, double avgDocLength,
                                  double termConcentration, double topicConcentration, long seed) {
        if (documents < 1 || terms < 1 || topics < 1 || avgDocLength <= 0) {
            throw new IllegalArgumentException("documents, terms, topics and avgDocLength must be positive");
        }
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
