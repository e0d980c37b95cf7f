/**
 * Data with known answers, for notebooks, tests and benchmarks: topic-model corpora, cryo-EM particles in two
 * conformations, imbalanced single-cell atlases, and large files resampled from small ones.
 */
package dev.memfit.synthetic;
