/**
 * numpy {@code .npy}: headers of versions 1.0 to 3.0, every numeric dtype in both byte orders and both memory orders,
 * read, memory-mapped ({@link dev.memfit.io.npy.Npy#map}) or written in place under a temporary name; folders of
 * one-sample files ({@link dev.memfit.io.npy.FileSet}).
 */
package dev.memfit.io.npy;
