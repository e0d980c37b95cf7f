/**
 * Zarr v2: AnnData {@code .zarr} stores (and {@code .zarr.zip} archives) read by element and row ranges
 * ({@link dev.memfit.io.zarr.Zarr} opens a store, {@link dev.memfit.io.zarr.ZarrArray} reads an array), as
 * zarr-python 2 and anndata 0.8 write them with their default Blosc compressor; {@link dev.memfit.io.zarr.ZarrAnnData}
 * reads the AnnData object in a store as {@code io.hdf5.H5ad} reads an {@code .h5ad} (both are
 * {@link dev.memfit.io.anndata.AnnData}s), finding its arrays by anndata's layout rather than by listing keys.
 *
 * <p><b>Why a reader of its own.</b> No maintained Java zarr library is on Maven Central (zarr-java is not served,
 * jzarr needs a repository outside it), and the format is small: JSON metadata beside one file per chunk.
 *
 * <p><b>Stores.</b> A folder is one file per key ({@code .zgroup}, {@code .zattrs}, {@code .zarray}, chunks
 * {@code 0}, {@code 0.1}, or {@code 0/1} with the {@code /} dimension separator), read through
 * {@link dev.memfit.io.storage.Storage}, so an object cache reads a bucket prefix the same way; a chunk absent from the
 * store reads as the fill value ({@link dev.memfit.io.storage.Storage#exists}). A zip archive is read from its central
 * directory with the same storage, entries stored (as zarr's ZipStore writes them) or deflated (as anndata's test
 * archive ships some). Consolidated metadata ({@code .zmetadata}) is used when present.
 *
 * <p><b>JSON.</b> The metadata is parsed with Jackson, which the library already depends on (jackson-databind: shard plans,
 * loader state, feature caches), so neither a new dependency nor a hand-written parser: non-standard {@code NaN} literals,
 * which Python's json module writes in attributes, are allowed.
 *
 * <p><b>Codecs.</b> Blosc 1 frames are decoded in Java rather than through Debian's libblosc1 via the FFM API, so that
 * no system library is needed on Binder or a Mac. The frame layout comes from c-blosc's
 * {@code README_CHUNK_FORMAT.rst} and how {@code blosc/blosc.c} reads it: the 16-byte header (version, inner codec
 * version, flags for byte shuffle, memcpyed and bit shuffle, the do-not-split flag and the inner codec in the top three
 * bits, the type size, decoded bytes, block size, encoded bytes), the block starts, the splits of each block, byte and
 * bit unshuffling ({@code blosc/shuffle.c}, {@code blosc/bitshuffle-generic.c}). The inner codecs: lz4 and lz4hc
 * through lz4-java, zstd through zstd-jni, zlib through the JDK's {@link java.util.zip.Inflater}, and BloscLZ and
 * Snappy by small decoders written here from {@code blosc/blosclz.c} and Snappy's format description. numcodecs'
 * {@code zlib}, {@code gzip}, {@code zstd} and {@code lz4} compressors, no compressor, and the {@code vlen-utf8} object
 * codec anndata writes strings with are read too. Anything else fails with an
 * {@link dev.memfit.InvalidFileException} naming the store, the key, what memfit reads and what was found.
 *
 * <p><b>Types.</b> {@code b1}, {@code i1}-{@code i8}, {@code u1}-{@code u8}, {@code f2}-{@code f8} in either byte
 * order, fixed-length {@code S} and {@code U} text, and {@code |O} strings; C and F order (chunks are transposed to C
 * order when decoded).
 */
package dev.memfit.io.zarr;
