/**
 * AnnData, whatever holds it: the {@link dev.memfit.io.anndata.AnnData} interface every reader implements (the
 * {@code .h5ad} reader in {@code io.hdf5}, the zarr reader in {@code io.zarr}; {@code dev.memfit.io.AnnDataFiles}
 * picks one from the path), and what both share: {@link dev.memfit.io.anndata.FrameColumn} (an {@code obs}/{@code var}
 * column with its type, carried unchanged by preprocessing and shards), {@link dev.memfit.io.anndata.AnnDataColumns}
 * (the checks of categorical and nullable columns, one set of messages), and the out-of-core CSC-to-CSR transpose
 * ({@link dev.memfit.io.anndata.CscTranspose}, shared per process by {@link dev.memfit.io.anndata.SharedTranspose}).
 * Below {@code io.hdf5} and {@code io.zarr}: it knows neither format.
 */
package dev.memfit.io.anndata;
