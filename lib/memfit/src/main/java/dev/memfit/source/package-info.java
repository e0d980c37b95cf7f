/**
 * Random access to samples: {@link dev.memfit.source.SampleSource} and its implementations (native memory, a
 * memory-mapped {@code .npy}, lazy records read on several threads, subsets). Loaders in {@code dev.memfit.data}
 * turn any source into batches.
 */
package dev.memfit.source;
