/**
 * numpy {@code .npy}: headers of versions 1.0 to 3.0, every numeric dtype in both byte orders and both memory orders,
 * read, memory-mapped ({@link dev.memfit.io.npy.Npy#map}) or written in place under a temporary name; the headers of
 * structured arrays (records with named fields, such as cryoSPARC's {@code .cs}: {@link dev.memfit.io.npy.NpyRecords},
 * {@link dev.memfit.io.npy.Npy#readRecords}); folders of one-sample files ({@link dev.memfit.io.npy.FileSet}).
 */
package dev.memfit.io.npy;
