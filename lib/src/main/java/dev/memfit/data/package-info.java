/**
 * Loading: random-access sample sources (in memory, memory-mapped), the batch loader with prefetch, and the DJL
 * dataset adapter.
 *
 * <p>{@link dev.memfit.data.Datasets} is the entry point.
 */
package dev.memfit.data;
