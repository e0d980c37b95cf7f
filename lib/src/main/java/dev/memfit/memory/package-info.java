/**
 * Memory: the probe that measures heap, native, mapped, resident and device memory during a run, and memfit's
 * tally of its own native memory.
 */
package dev.memfit.memory;
