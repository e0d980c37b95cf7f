package dev.memfit.train;

import dev.memfit.source.ArraySource;

import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * A fitted topic model: document-topic proportions L (in native memory, n x k), topic-term distributions F (k x m)
 * and the training history.
 *
 * @param documentTopics L, n rows of k proportions that sum to 1 (float32, off-heap)
 * @param topicTerms F, k rows of m probabilities that sum to 1
 * @param history one entry per epoch
 * @param device the device the model trained on, such as {@code cpu()} or {@code gpu(0)}
 */
public record TopicFit(ArraySource documentTopics, float[][] topicTerms, List<EpochStats> history, String device)
        implements AutoCloseable {

    /**
     * The topic proportions of one document.
     *
     * @param document the document index
     * @return k proportions
     */
    public float[] documentTopics(long document) {
        int k = topicTerms.length;
        float[] row = new float[k];
        java.lang.foreign.MemorySegment.copy(documentTopics.data(), ValueLayout.JAVA_FLOAT, document * k * Float.BYTES, row, 0, k);
        return row;
    }

    /**
     * The mean loss of each epoch, for plotting.
     *
     * @return losses by epoch
     */
    public double[] losses() {
        return history.stream().mapToDouble(EpochStats::loss).toArray();
    }

    /**
     * The wall time of each epoch.
     *
     * @return seconds by epoch
     */
    public double[] epochSeconds() {
        return history.stream().mapToDouble(EpochStats::seconds).toArray();
    }

    /** Frees L. */
    @Override
    public void close() {
        documentTopics.close();
    }
}
