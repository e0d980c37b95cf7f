/**
 * Loading: the one batch pipeline ({@link dev.memfit.data.Loader}: batches in off-heap buffers, prefetch, early exit)
 * over any sample source, in any order (sequential, shuffled, block-shuffled for streaming, weighted, distributed),
 * the fluent builder that makes one, and the DJL dataset adapter.
 *
 * <p>{@link dev.memfit.data.Datasets} is the entry point.
 */
package dev.memfit.data;
