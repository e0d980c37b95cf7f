/**
 * HDF5: AnnData {@code .h5ad} read by row ranges ({@link dev.memfit.io.hdf5.H5ad}, an
 * {@link dev.memfit.io.anndata.AnnData}: jhdf parses the file; contiguous
 * datasets are read from a mapping, chunked ones from their chunk index with gzip/shuffle chunks decoded once into a
 * bounded cache, as anndata writes every sparse {@code X}), a streaming writer for
 * matrices larger than memory ({@link dev.memfit.io.hdf5.Hdf5Writer}, {@link dev.memfit.io.hdf5.H5adWriter}), and
 * many small samples packed into one file ({@link dev.memfit.io.hdf5.Pack}, {@link dev.memfit.io.hdf5.PackedFile}).
 */
package dev.memfit.io.hdf5;
