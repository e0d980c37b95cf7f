/**
 * Decoders of compressed chunks shared by the formats: {@link dev.memfit.io.codec.Zlib} (HDF5's gzip filter, zarr's zlib
 * codec) through the system's libdeflate where it is installed.
 */
package dev.memfit.io.codec;
