/**
 * Trainers on DJL PyTorch: the Poisson NMF topic model, the image VAE and the cell-type classifier.
 */
package dev.memfit.train;
