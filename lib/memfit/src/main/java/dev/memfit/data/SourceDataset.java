package dev.memfit.data;

import dev.memfit.source.SampleSource;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Record;
import ai.djl.util.Progress;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A {@link SampleSource} as a DJL {@link RandomAccessDataset}, for code written against DJL's training API
 * ({@code EasyTrain}, {@code Trainer.iterateDataset}).
 *
 * <pre>{@code
 * SourceDataset dataset = SourceDataset.builder().setSource(features).optLabels(labels)
 *         .setSampling(256, true).build();
 * }</pre>
 *
 * <p>DJL reads one sample per {@code get} call and stacks them; memfit's own {@link Loader} reads whole batches into
 * reused off-heap buffers and is faster for large data.
 */
public final class SourceDataset extends RandomAccessDataset {

    private final SampleSource features;
    private final SampleSource labels;

    private SourceDataset(Builder builder) {
        super(builder);
        this.features = builder.features;
        this.labels = builder.labels;
    }

    /**
     * Starts a builder.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public Record get(NDManager manager, long index) {
        NDList data = new NDList(read(features, manager, index));
        NDList label = labels == null ? new NDList() : new NDList(read(labels, manager, index));
        return new Record(data, label);
    }

    private static NDArray read(SampleSource source, NDManager manager, long index) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(Math.toIntExact(source.sampleBytes())).order(ByteOrder.nativeOrder());
        source.read(index, MemorySegment.ofBuffer(buffer));
        return manager.create(buffer, source.sampleShape(), DjlTypes.of(source.dtype()));
    }

    @Override
    protected long availableSize() {
        return features.size();
    }

    @Override
    public void prepare(Progress progress) {
        // The source is open and random-access already: nothing to download or index.
    }

    /** Builds a {@link SourceDataset}. */
    public static final class Builder extends BaseBuilder<Builder> {
        private SampleSource features;
        private SampleSource labels;

        /** Creates a builder; {@link SourceDataset#builder()} is the usual way. */
        public Builder() {
            // sampling and other DJL settings come from BaseBuilder
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the features (required).
         *
         * @param source the samples
         * @return this builder
         */
        public Builder setSource(SampleSource source) {
            this.features = source;
            return this;
        }

        /**
         * Sets labels, one per feature sample.
         *
         * @param source the labels
         * @return this builder
         */
        public Builder optLabels(SampleSource source) {
            this.labels = source;
            return this;
        }

        /**
         * Builds the dataset.
         *
         * @return the dataset
         */
        public SourceDataset build() {
            if (features == null) {
                throw new IllegalArgumentException("setSource(...) is required");
            }
            if (labels != null && labels.size() != features.size()) {
                throw new IllegalArgumentException("labels have " + labels.size() + " samples, features " + features.size());
            }
            return new SourceDataset(this);
        }
    }
}
