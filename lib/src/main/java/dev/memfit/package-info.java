/**
 * memfit: loaders, memory estimators and probes, samplers and trainers for data larger than GPU memory or RAM.
 *
 * <p>Start at {@link dev.memfit.data.Datasets} for loading, {@link dev.memfit.io.Npy} for files and
 * {@link dev.memfit.memory.MemoryProbe} for measuring.
 */
package dev.memfit;
