/**
 * Cryo-EM particle images: MRC2014 stacks (read and written), and the listings that name them: RELION {@code .star}
 * files ({@code index@stack}), cryoSPARC {@code .cs} files (numpy records whose {@code blob/path} and {@code blob/idx}
 * name each particle's stack and image, with the job's passthrough file when the fields are there) and {@code .txt}
 * lists of stacks ({@link dev.memfit.io.mrc.ParticleStack}). Relative stack names start from the listing's folder or
 * a folder above it (a RELION or cryoSPARC project's), or from a data folder, as cryoDRGN's {@code --datadir}.
 */
package dev.memfit.io.mrc;
