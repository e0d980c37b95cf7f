/**
 * Samplers: which samples an epoch visits and in which order (sequential, seeded shuffle, weighted with a curriculum,
 * distributed over ranks by shard, block shuffling of consecutive samples, random subsets), and
 * {@link dev.memfit.sample.BatchDiversity}, how mixed an order's batches are.
 */
package dev.memfit.sample;
