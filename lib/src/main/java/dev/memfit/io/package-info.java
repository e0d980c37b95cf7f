/**
 * File formats: numpy {@code .npy} (read, write, memory-map), with errors that name the file and the position.
 *
 * <p>{@link dev.memfit.io.Npy} is the entry point.
 */
package dev.memfit.io;
