/**
 * memfit: loaders, memory estimators and probes, samplers and trainers for data larger than GPU memory or RAM.
 *
 * <p>Start at {@link dev.memfit.data.Datasets} for loading, {@link dev.memfit.io.Formats} for files and
 * {@link dev.memfit.memory.MemoryProbe} for measuring. This package holds what every layer shares: the exceptions,
 * element types, memfit's ledger of its own native and mapped memory, sizes from parameters, and progress bars.
 */
package dev.memfit;
