/**
 * Cryo-EM particle images: MRC2014 stacks (read and written), and the listings that name them: RELION {@code .star}
 * files ({@code index@stack}) and {@code .txt} lists of stacks ({@link dev.memfit.io.mrc.ParticleStack}).
 */
package dev.memfit.io.mrc;
