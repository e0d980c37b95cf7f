/**
 * Benchmarks behind {@code ./memfit bench}: memfit measured side by side with the reference implementations.
 */
package dev.memfit.bench;
