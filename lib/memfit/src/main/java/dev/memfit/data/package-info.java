/**
 * Loading: the one batch pipeline ({@link dev.memfit.data.Loader}: batches in off-heap buffers, prefetch, early exit)
 * over any random-access sample source or an {@code .h5ad} streamed through a shuffle buffer, the fluent builders that
 * make one, and the DJL dataset adapter.
 *
 * <p>{@link dev.memfit.data.Datasets} is the entry point.
 */
package dev.memfit.data;
