/**
 * Samplers: which samples an epoch visits and in which order (sequential, seeded shuffle, weighted with a curriculum,
 * distributed over ranks by shard, random subsets).
 */
package dev.memfit.sample;
