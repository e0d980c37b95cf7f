/**
 * Trainers on DJL PyTorch: the Poisson NMF topic model, the image VAE and the cell-type classifier.
 *
 * <p>Each is a {@link dev.memfit.train.Trainer}: built by a {@link dev.memfit.train.TrainerBuilder} ({@code setX}
 * required, {@code optX} optional), {@code fit(Loader)} returns a {@link dev.memfit.train.FitResult}, and
 * {@code close()} frees its native memory. All three run one training loop, which owns the epochs (counted from 1),
 * their timing and {@link dev.memfit.train.EpochStats}, progress, gradient accumulation, the device's memory cache
 * and the {@link dev.memfit.train.EpochListener}; a model supplies only its forward pass, loss and update.
 */
package dev.memfit.train;
