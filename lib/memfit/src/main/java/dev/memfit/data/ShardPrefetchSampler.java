package dev.memfit.data;

import dev.memfit.sample.SampleOrder;
import dev.memfit.sample.Sampler;
import dev.memfit.sample.SequentialSampler;
import dev.memfit.sample.ShardShuffleSampler;
import dev.memfit.shard.ObjectShardStore;

import java.util.function.LongFunction;

/**
 * The sampler of a loader over a shard folder in a bucket: shard by shard ({@link ShardShuffleSampler} for a
 * shuffle, in file order otherwise), telling the store each epoch's shard order as the epoch starts so that it
 * stages the next shards while the current one is read.
 */
final class ShardPrefetchSampler implements Sampler {

    private final Sampler order;
    private final LongFunction<int[]> shardOrder;
    private final ObjectShardStore store;

    private ShardPrefetchSampler(Sampler order, LongFunction<int[]> shardOrder, ObjectShardStore store) {
        this.order = order;
        this.shardOrder = shardOrder;
        this.store = store;
    }

    /** Shard by shard in a seeded random order with {@code seed}, in file order without. */
    static Sampler of(ObjectShardStore store, Long seed) {
        if (seed == null) {
            int[] identity = java.util.stream.IntStream.range(0, store.shardSizes().length).toArray();
            return new ShardPrefetchSampler(new SequentialSampler(store.size()), epoch -> identity, store);
        }
        ShardShuffleSampler shuffle = ShardShuffleSampler.builder().setShardSizes(store.shardSizes()).optSeed(seed).build();
        return new ShardPrefetchSampler(shuffle, shuffle::shardOrder, store);
    }

    @Override
    public long epochLength() {
        return order.epochLength();
    }

    @Override
    public long[] indices(long epoch) {
        return SampleOrder.toArray(order(epoch));
    }

    @Override
    public SampleOrder order(long epoch) {
        store.prefetchOrder(shardOrder.apply(epoch));
        return order.order(epoch);
    }

    @Override
    public String settings() {
        return order.settings();
    }

    @Override
    public String toString() {
        return order.toString();
    }
}
