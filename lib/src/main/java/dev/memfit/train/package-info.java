/**
 * Trainers on DJL PyTorch: the Poisson NMF topic model, synthetic data with known answers, recovery scores.
 */
package dev.memfit.train;
