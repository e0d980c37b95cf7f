#!/usr/bin/python3
"""Writes the seed inputs of the zarr fuzz tests (lib/memfit/src/test/resources/dev/memfit/io/zarr/*FuzzTestInputs).

Everything comes from the reference tools with small data (anndata 0.8, zarr-python 2, numcodecs), one seed per
codec and layout memfit reads. Run from lib/memfit: /usr/bin/python3 src/test/fuzz/make_zarr_seeds.py

ZarrFuzzTest/fuzzZarr: whole AnnData stores as .zarr.zip archives (zarr's ZipStore, entries stored, one deflated),
X as CSR, dense and CSC, with zarr's default compressor (Blosc lz4, byte shuffle) and every other one memfit decodes.

ZarrChunkFuzzTest/fuzzChunk: one array's .zarray (the JSON zarr-python wrote), a newline, then the bytes of its
chunk 0 as zarr-python stored them: each Blosc inner codec and shuffle, zlib, gzip, zstd, lz4, no compressor;
numbers of several types and byte orders, 2-D C and F order, text (vlen-utf8, U, S), missing chunks (fill value).
"""
import json
import os
import tempfile
import zipfile

import anndata
import numcodecs
import numpy as np
import pandas as pd
import scipy.sparse as sp
import zarr
import zarr.storage

from seed_anndata import small_adata

RES = "src/test/resources/dev/memfit/io/zarr"


def folder(*parts):
    path = os.path.join(RES, *parts)
    os.makedirs(path, exist_ok=True)
    return path


def write(path, data):
    with open(path, "wb") as out:
        out.write(data)


def zip_bytes(adata, compressor="default", consolidate=False, deflate=False):
    """anndata's write_zarr to a folder with zarr's default compressor set to the one asked for, then zipped."""
    saved = zarr.storage.default_compressor
    if compressor != "default":
        zarr.storage.default_compressor = compressor
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = os.path.join(tmp, "a.zarr")
            adata.write_zarr(store)
            if consolidate:
                zarr.consolidate_metadata(store)
            archive = os.path.join(tmp, "a.zarr.zip")
            with zarr.ZipStore(archive, mode="w",
                               compression=zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as zs:
                zarr.copy_store(zarr.DirectoryStore(store), zs)
            with open(archive, "rb") as f:
                return f.read()
    finally:
        zarr.storage.default_compressor = saved


Blosc = numcodecs.Blosc

# ---- whole stores
stores = folder("ZarrFuzzTestInputs", "fuzzZarr")
write(f"{stores}/valid_csr_blosc_lz4.zarr.zip", zip_bytes(small_adata()))
write(f"{stores}/valid_csr_blosc_zstd_bitshuffle.zarr.zip",
      zip_bytes(small_adata(), Blosc(cname="zstd", clevel=5, shuffle=Blosc.BITSHUFFLE)))
write(f"{stores}/valid_csr_blosc_blosclz.zarr.zip", zip_bytes(small_adata(), Blosc(cname="blosclz", clevel=9)))
write(f"{stores}/valid_csr_blosc_snappy.zarr.zip", zip_bytes(small_adata(), Blosc(cname="snappy")))
write(f"{stores}/valid_csr_blosc_zlib_noshuffle.zarr.zip",
      zip_bytes(small_adata(), Blosc(cname="zlib", shuffle=Blosc.NOSHUFFLE)))
write(f"{stores}/valid_csr_zlib.zarr.zip", zip_bytes(small_adata(), numcodecs.Zlib(level=6)))
write(f"{stores}/valid_csr_gzip.zarr.zip", zip_bytes(small_adata(), numcodecs.GZip(level=6)))
write(f"{stores}/valid_csr_zstd.zarr.zip", zip_bytes(small_adata(), numcodecs.Zstd(level=3)))
write(f"{stores}/valid_csr_lz4.zarr.zip", zip_bytes(small_adata(), numcodecs.LZ4()))
write(f"{stores}/valid_csr_none_consolidated.zarr.zip", zip_bytes(small_adata(), None, consolidate=True))
write(f"{stores}/valid_csr_deflated_entries.zarr.zip", zip_bytes(small_adata(), deflate=True))
dense = small_adata()
dense.X = dense.X.toarray()
write(f"{stores}/valid_dense_blosc_lz4.zarr.zip", zip_bytes(dense))
csc = small_adata()
csc.X = sp.csc_matrix(csc.X)
write(f"{stores}/valid_csc_blosc_lz4.zarr.zip", zip_bytes(csc))

# ---- single chunks: the .zarray, a newline, chunk 0
chunks = folder("ZarrChunkFuzzTestInputs", "fuzzChunk")


def chunk_seed(name, data, chunks_=None, shape=None, **kwargs):
    with tempfile.TemporaryDirectory() as tmp:
        store = zarr.DirectoryStore(tmp)
        a = zarr.open_array(store=store, mode="w", shape=shape or data.shape, chunks=chunks_ or data.shape,
                            dtype=data.dtype, **kwargs)
        a[tuple(slice(0, n) for n in data.shape)] = data
        meta = store[".zarray"]
        key = "0" if data.ndim <= 1 else ".".join("0" * data.ndim)
        # the .zarray on one line, so that the first newline ends it
        line = json.dumps(json.loads(meta), separators=(",", ":")).encode()
        write(f"{chunks}/{name}.chunk", line + b"\n" + store[key])


rng = np.random.default_rng(5)
f4 = (np.arange(256, dtype=np.float32) % 17) * 0.5                  # repeats, so that every codec compresses
for cname in ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"):
    for shuffle, label in ((Blosc.NOSHUFFLE, "noshuffle"), (Blosc.SHUFFLE, "shuffle"), (Blosc.BITSHUFFLE, "bitshuffle")):
        chunk_seed(f"valid_blosc_{cname}_{label}_f4", f4, compressor=Blosc(cname=cname, clevel=5, shuffle=shuffle))
# Blosc frames of several blocks (split into typesize streams where c-blosc splits) and of a memcpyed frame
chunk_seed("valid_blosc_lz4_blocks_i8", np.arange(2048, dtype=np.int64) // 3,
           compressor=Blosc(cname="lz4", shuffle=Blosc.SHUFFLE, blocksize=4096))
chunk_seed("valid_blosc_blosclz_blocks_f8", np.repeat(rng.random(64), 32),
           compressor=Blosc(cname="blosclz", shuffle=Blosc.BITSHUFFLE, blocksize=2048))
chunk_seed("valid_blosc_memcpyed_u1", rng.integers(0, 256, 200, dtype=np.uint8), compressor=Blosc(cname="lz4", clevel=0))
chunk_seed("valid_zlib_f4", f4, compressor=numcodecs.Zlib(level=6))
chunk_seed("valid_gzip_f4", f4, compressor=numcodecs.GZip(level=6))
chunk_seed("valid_zstd_f4", f4, compressor=numcodecs.Zstd(level=3))
chunk_seed("valid_lz4_f4", f4, compressor=numcodecs.LZ4())
chunk_seed("valid_none_f4", f4[:32], compressor=None)
# types, byte orders and layouts
chunk_seed("valid_blosc_bigendian_i4", np.arange(64, dtype=">i4"), compressor=Blosc(cname="lz4"))
chunk_seed("valid_zlib_f2", np.linspace(0, 1, 64).astype(np.float16), compressor=numcodecs.Zlib())
chunk_seed("valid_blosc_bool", np.arange(64) % 3 == 0, compressor=Blosc(cname="zstd"))
chunk_seed("valid_blosc_2d_c_f4", f4.reshape(16, 16), compressor=Blosc(cname="lz4"))
chunk_seed("valid_zlib_2d_fortran_i2", np.arange(48, dtype=np.int16).reshape(6, 8), compressor=numcodecs.Zlib(),
           order="F")
chunk_seed("valid_blosc_3d_u2", np.arange(60, dtype=np.uint16).reshape(3, 4, 5), compressor=Blosc(cname="snappy"))
# text: anndata's vlen-utf8 strings, with and without a compressor, and numpy's fixed-width U and S
names = np.array([f"cell{i}" for i in range(12)] + ["", "é ü", "x" * 40], dtype=object)
chunk_seed("valid_blosc_vlen_utf8", names, compressor=Blosc(cname="lz4"), object_codec=numcodecs.VLenUTF8())
chunk_seed("valid_zstd_vlen_utf8", names, compressor=numcodecs.Zstd(), object_codec=numcodecs.VLenUTF8())
chunk_seed("valid_none_vlen_utf8", names[:5], compressor=None, object_codec=numcodecs.VLenUTF8())
chunk_seed("valid_blosc_unicode_U5", np.array(["a", "bc", "déf", "", "ghijk"], dtype="<U5"), compressor=Blosc(cname="lz4"))
chunk_seed("valid_zlib_bytes_S4", np.array([b"ab", b"cdef", b""], dtype="S4"), compressor=numcodecs.Zlib())
# an array longer than its one stored chunk: the rest reads as the fill value
chunk_seed("valid_blosc_fill_value_i4", np.arange(16, dtype=np.int32), chunks_=(16,), shape=(40,),
           compressor=Blosc(cname="lz4"), fill_value=7)
chunk_seed("valid_zlib_fill_nan_f8", np.arange(8, dtype=np.float64), chunks_=(8,), shape=(20,),
           compressor=numcodecs.Zlib(), fill_value=np.nan)
print("zarr seeds written")
