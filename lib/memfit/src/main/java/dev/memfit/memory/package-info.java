/**
 * Memory: the estimator (heap, native, mapped, device, page cache) and the advice drawn from it, the loading
 * strategy the advice recommends (which opens the loader), the probe that measures the same quantities during a run,
 * batch sizes under a budget, and the device cache.
 */
package dev.memfit.memory;
