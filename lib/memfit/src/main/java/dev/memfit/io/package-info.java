/**
 * File formats: {@link dev.memfit.io.Formats} recognises and describes every format memfit reads; the formats
 * themselves live in {@code io.npy}, {@code io.mrc} (with RELION STAR, cryoSPARC {@code .cs} and stack lists), {@code io.hdf5} (AnnData,
 * the streaming writer, packed files) and {@code io.storage} (where the bytes come from).
 *
 * <p>Errors name the file, the position and what was expected ({@link dev.memfit.InvalidFileException}).
 */
package dev.memfit.io;
