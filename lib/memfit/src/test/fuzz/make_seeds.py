#!/usr/bin/python3
"""Writes the seed inputs of the fuzz tests (lib/memfit/src/test/resources/dev/memfit/io/*/*FuzzTestInputs).

Valid files come from the reference tools with their defaults (numpy, mrcfile, anndata); the bad cases of issue 11
are crafted from them. Run from lib/memfit: /usr/bin/python3 src/test/fuzz/make_seeds.py
The STAR and .txt seeds name the fixture stacks that StarFuzzTest / ListingFuzzTest write beside them
(a.mrcs: 2 images 4x4; b.mrcs: 1 image 3x3; s.mrc: 1 image 4x4; 'my stack.mrcs': 2 images 4x4; d/e.mrcs: 3 images
4x4; c.mrcs: truncated; f.mrcs: a folder).
"""
import io
import os
import struct
import tempfile

import anndata
import h5py
import mrcfile
import numpy as np
import pandas as pd
import scipy.sparse as sp

from seed_anndata import small_adata

RES = "src/test/resources/dev/memfit/io"


def folder(*parts):
    path = os.path.join(RES, *parts)
    os.makedirs(path, exist_ok=True)
    return path


def npy_bytes(array, version=None):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=version)
    return buf.getvalue()


def npy_raw(header_dict, data=b"", major=1):
    text = repr(header_dict).encode("latin1")
    prefix = 10 if major == 1 else 12
    pad = 64 - (prefix + len(text) + 1) % 64
    text = text + b" " * pad + b"\n"
    size = struct.pack("<H", len(text)) if major == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes([major, 0]) + size + text + data


def write(path, data):
    with open(path, "wb") as out:
        out.write(data)


# ---- .npy
npy = folder("npy", "NpyFuzzTestInputs", "fuzzNpy")
rng = np.random.default_rng(11)
write(f"{npy}/valid_f4_2x3.npy", npy_bytes(rng.random((2, 3), dtype=np.float32)))
write(f"{npy}/valid_f8_fortran.npy", npy_bytes(np.asfortranarray(rng.random((3, 2)))))
write(f"{npy}/valid_i4_bigendian.npy", npy_bytes(np.arange(6, dtype=">i4").reshape(2, 3)))
write(f"{npy}/valid_u1_v2.npy", npy_bytes(np.arange(4, dtype=np.uint8), version=(2, 0)))
write(f"{npy}/valid_bool_scalar.npy", npy_bytes(np.array(True)))
write(f"{npy}/valid_f2_empty.npy", npy_bytes(np.zeros((0, 5), dtype=np.float16)))
# issue 11: a shape whose product overflows int64 (was an ArithmeticException trace)
write(f"{npy}/bad_shape_overflow.npy", npy_raw({"descr": "<f4", "fortran_order": False,
                                                "shape": (2 ** 40, 2 ** 40)}, b"\0" * 16))
# issue 11: <U1 was reported as uint8
write(f"{npy}/bad_unicode_U1.npy", npy_bytes(np.array(["a", "b"], dtype="<U1")))
write(f"{npy}/bad_object.npy", npy_raw({"descr": "|O", "fortran_order": False, "shape": (2,)}, b"\0" * 16))
write(f"{npy}/bad_complex.npy", npy_bytes(np.zeros(2, dtype=np.complex64)))
write(f"{npy}/bad_datetime.npy", npy_bytes(np.zeros(2, dtype="datetime64[s]")))
write(f"{npy}/bad_truncated.npy", npy_bytes(np.ones((4, 4), dtype=np.float32))[:-5])
write(f"{npy}/bad_header_length.npy", b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{'descr': '<f4'}")

# ---- MRC
mrc = folder("mrc", "MrcFuzzTestInputs", "fuzzMrc")


def mrc_bytes(data, voxel=1.5, extended=None):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.mrcs")
        with mrcfile.new(path) as m:
            m.set_data(data)
            m.voxel_size = voxel
            if extended is not None:
                m.set_extended_header(extended)
        with open(path, "rb") as f:
            return f.read()


write(f"{mrc}/valid_f4_3x4x5.mrcs", mrc_bytes(rng.random((3, 4, 5), dtype=np.float32)))
write(f"{mrc}/valid_i1.mrcs", mrc_bytes(np.arange(2 * 3 * 3, dtype=np.int8).reshape(2, 3, 3)))
write(f"{mrc}/valid_i2.mrcs", mrc_bytes(np.arange(2 * 2 * 3, dtype=np.int16).reshape(2, 2, 3)))
write(f"{mrc}/valid_u2.mrcs", mrc_bytes(np.arange(2 * 2 * 2, dtype=np.uint16).reshape(2, 2, 2)))
write(f"{mrc}/valid_f2.mrcs", mrc_bytes(np.ones((1, 2, 2), dtype=np.float16)))
write(f"{mrc}/valid_extended_header.mrcs", mrc_bytes(np.ones((1, 2, 2), dtype=np.float32),
                                                      extended=np.zeros(8, dtype=np.int32)))
# issue 11: NX = NY = 2^30 in a 1 KiB file (was an OutOfMemoryError trace and a 4.6e18-byte estimate)
head = bytearray(mrc_bytes(np.ones((1, 1, 1), dtype=np.float32))[:1024])
struct.pack_into("<iiii", head, 0, 2 ** 30, 2 ** 30, 16, 2)
write(f"{mrc}/bad_nx_ny_2e30.mrcs", bytes(head))
write(f"{mrc}/bad_truncated.mrcs", mrc_bytes(np.ones((2, 4, 4), dtype=np.float32))[:-7])
head = bytearray(mrc_bytes(np.ones((1, 2, 2), dtype=np.float32)))
struct.pack_into("<i", head, 92, -1)          # NSYMBT 2^32 - 1
write(f"{mrc}/bad_nsymbt.mrcs", bytes(head))
head = bytearray(mrc_bytes(np.ones((1, 2, 2), dtype=np.float32)))
struct.pack_into("<i", head, 12, 4)           # complex mode
write(f"{mrc}/bad_mode4.mrcs", bytes(head))

# ---- STAR (names the fixture stacks)
star = folder("mrc", "StarFuzzTestInputs", "fuzzStar")
write(f"{star}/valid_simple.star", b"data_\nloop_\n_rlnImageName #1\n_rlnDefocusU #2\n"
                                   b"1@a.mrcs 1000.0\n2@a.mrcs 1100.0\n1@d/e.mrcs 900\n")
write(f"{star}/valid_relion31.star",
      b"# version 30001\n\ndata_optics\n\nloop_\n_rlnOpticsGroup #1\n_rlnImageSize #2\n_rlnVoltage #3\n"
      b"1 4 300.0\n\n# version 30001\n\ndata_particles\n\nloop_\n_rlnImageName #1\n_rlnOpticsGroup #2\n"
      b"_rlnAngleRot #3\n000001@a.mrcs 1 10.5\n000002@a.mrcs 1 -3\n000003@d/e.mrcs 1 0\n")
write(f"{star}/valid_single_image.star", b"data_images\nloop_\n_rlnImageName\ns.mrc\n")
write(f"{star}/valid_crlf_pairs.star", b"data_general\r\n_rlnImageSize 4\r\n\r\ndata_particles\r\nloop_\r\n"
                                       b"_rlnImageName\r\n_rlnMicrographName\r\n1@a.mrcs mic1.mrc # comment\r\n")
# issue 11: quoted fields with spaces (were split on whitespace, shifting columns) and a short row
write(f"{star}/bad_quoted_spaces.star", b"data_particles\nloop_\n_rlnImageName\n_rlnMicrographName\n_rlnDefocusU\n"
                                        b"'1@my stack.mrcs' \"mic 1.mrc\" 1000\n2@'my stack.mrcs' mic2 1100\n")
write(f"{star}/valid_quoted_spaces.star", b"data_particles\nloop_\n_rlnImageName\n_rlnMicrographName\n"
                                          b"'1@my stack.mrcs' \"mic 1.mrc\"\n\"2@my stack.mrcs\" 'it's here'\n")
write(f"{star}/bad_short_row.star", b"data_\nloop_\n_rlnImageName\n_rlnDefocusU\n1@a.mrcs 1000\n2@a.mrcs\n")
write(f"{star}/bad_index_range.star", b"data_\nloop_\n_rlnImageName\n3@a.mrcs\n")
write(f"{star}/bad_size_mismatch.star", b"data_\nloop_\n_rlnImageName\n1@a.mrcs\n1@b.mrcs\n")
write(f"{star}/bad_missing_stack.star", b"data_\nloop_\n_rlnImageName\n1@nothere.mrcs\n")
write(f"{star}/bad_folder_and_truncated.star", b"data_\nloop_\n_rlnImageName\n1@f.mrcs\n1@c.mrcs\n")
write(f"{star}/bad_optics_size.star", b"data_optics\nloop_\n_rlnOpticsGroup\n_rlnImageSize\n1 64\n"
                                      b"data_particles\nloop_\n_rlnImageName\n1@a.mrcs\n")
write(f"{star}/bad_multiline.star", b"data_\n_rlnText\n;\nsome text\n;\n")
write(f"{star}/bad_unterminated_quote.star", b"data_\nloop_\n_rlnImageName\n'1@a.mrcs\n")

# ---- .txt listings (name the fixture stacks)
txt = folder("mrc", "ListingFuzzTestInputs", "fuzzListing")
write(f"{txt}/valid_two_stacks.txt", b"a.mrcs\nd/e.mrcs\n")
write(f"{txt}/valid_comments_crlf.txt", b"# stacks\r\n\r\n  a.mrcs  \r\nmy stack.mrcs\r\n")
write(f"{txt}/bad_empty.txt", b"")                              # issue 11: an empty listing
write(f"{txt}/bad_only_comments.txt", b"# nothing\n\n")
write(f"{txt}/bad_size_mismatch.txt", b"a.mrcs\nb.mrcs\n")
write(f"{txt}/bad_missing.txt", b"a.mrcs\nnothere.mrcs\n")
write(f"{txt}/bad_folder.txt", b"f.mrcs\n")
write(f"{txt}/bad_truncated_stack.txt", b"c.mrcs\n")
write(f"{txt}/bad_not_utf8.txt", b"a.mrcs\n\xff\xfe\n")
write(f"{txt}/bad_nul.txt", b"a.mrcs\x00\n")

# ---- cryoSPARC .cs (numpy records in cryoSPARC's field layout, naming the fixture stacks)
cs = folder("mrc", "CsFuzzTestInputs", "fuzzCs")
CS_FIELDS = [("uid", "<u8"), ("blob/path", "S12"), ("blob/idx", "<u4"), ("blob/shape", "<u4", (2,)),
             ("blob/psize_A", "<f4"), ("blob/sign", "<f4"), ("ctf/type", "S9"), ("ctf/df1_A", "<f4")]


def cs_bytes(rows, fields=CS_FIELDS, edit=None):
    table = np.zeros(len(rows), dtype=fields)
    table["uid"] = np.arange(len(rows)) + 2 ** 63
    table["blob/path"] = [p for p, _ in rows]
    table["blob/idx"] = [i for _, i in rows]
    if edit:
        edit(table)
    return npy_bytes(table)


write(f"{cs}/valid_two_stacks.cs", cs_bytes([("a.mrcs", 0), ("a.mrcs", 1), ("d/e.mrcs", 2), ("d/e.mrcs", 0)]))
write(f"{cs}/valid_exported.cs", cs_bytes([(">a.mrcs", 1), (">s.mrc", 0)]))
write(f"{cs}/valid_unicode.cs", cs_bytes([("my stack.mrcs", 1)], [("uid", "<u8"), ("blob/path", "<U14"),
                                                                   ("blob/idx", ">i8")]))
write(f"{cs}/bad_index_range.cs", cs_bytes([("a.mrcs", 0), ("a.mrcs", 2)]))
write(f"{cs}/bad_size_mismatch.cs", cs_bytes([("a.mrcs", 0), ("b.mrcs", 0)]))
write(f"{cs}/bad_missing_stack.cs", cs_bytes([("nothere.mrcs", 0)]))
write(f"{cs}/bad_folder_and_truncated.cs", cs_bytes([("f.mrcs", 0), ("c.mrcs", 0)]))
write(f"{cs}/bad_truncated.cs", cs_bytes([("a.mrcs", 0), ("a.mrcs", 1)])[:-5])
write(f"{cs}/bad_no_blob.cs", npy_bytes(np.zeros(2, dtype=[("uid", "<u8"), ("ctf/df1_A", "<f4")])))
write(f"{cs}/bad_empty_path.cs", cs_bytes([("", 0)]))
write(f"{cs}/bad_plain_npy.cs", npy_bytes(np.zeros(3, dtype=np.float32)))
write(f"{cs}/bad_object.cs", npy_raw({"descr": [("uid", "<u8"), ("blob/path", "|O"), ("blob/idx", "<u4")],
                                      "fortran_order": False, "shape": (1,)}, b"\0" * 20))
write(f"{cs}/bad_type.cs", npy_raw({"descr": [("blob/path", "|S6"), ("blob/idx", "<q4")],
                                    "fortran_order": False, "shape": (1,)}, b"a.mrcs\0\0\0\0"))
write(f"{cs}/bad_huge_rows.cs", npy_raw({"descr": [("blob/path", "|S6"), ("blob/idx", "<u4")],
                                         "fortran_order": False, "shape": (2 ** 62,)}, b"a.mrcs\0\0\0\0"))
write(f"{cs}/bad_csdat.cs", b"\x95CSDAT" + struct.pack("<I", 2) + b"{}")

# ---- .h5ad (anndata's defaults, then the bad cases of issue 11 made with h5py)
h5 = folder("hdf5", "H5adFuzzTestInputs", "fuzzH5ad")
pending = folder("hdf5", "H5adFuzzPending")


def h5ad_bytes(adata, edit=None, **kwargs):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.h5ad")
        adata.write_h5ad(path, **kwargs)
        if edit is not None:
            with h5py.File(path, "r+") as f:
                edit(f)
        with open(path, "rb") as f:
            return f.read()


write(f"{h5}/valid_csr.h5ad", h5ad_bytes(small_adata()))
gz = h5ad_bytes(small_adata(), compression="gzip")
write(f"{h5}/valid_csr_gzip.h5ad", gz)
dense = small_adata()
dense.X = dense.X.toarray()
write(f"{h5}/valid_dense.h5ad", h5ad_bytes(dense))
csc = small_adata()
csc.X = sp.csc_matrix(csc.X)
write(f"{h5}/valid_csc.h5ad", h5ad_bytes(csc))

# issue 11: obs column too short (refused from the shapes at open)


def short_column(f):
    del f["obs/n_counts"]
    f["obs"].create_dataset("n_counts", data=np.arange(3, dtype=np.float64))


write(f"{h5}/bad_obs_column_short.h5ad", h5ad_bytes(small_adata(), short_column))

def corrupt_gzip(f):
    # overwrite the middle of X/data's first gzip chunk with garbage
    info = f["X/data"].id.get_chunk_info(0)
    corrupt_gzip.at = (info.byte_offset, info.size)


data = bytearray(h5ad_bytes(small_adata(), corrupt_gzip, compression="gzip"))
at, size = corrupt_gzip.at
data[at + 2:at + size] = bytes((b ^ 0x5A) for b in data[at + 2:at + size])
write(f"{h5}/bad_corrupt_gzip_chunk.h5ad", bytes(data))

# The next two fail today with jhdf / Java exceptions instead of a MemfitException: kept out of the replayed
# corpus (H5adFuzzPending) until the .h5ad boundary wraps them. Move them into H5adFuzzTestInputs/fuzzH5ad then.
write(f"{pending}/bad_truncated.h5ad", h5ad_bytes(small_adata())[:3000])


def code_out_of_range(f):
    codes = f["obs/cell_type/codes"]
    values = codes[...]
    values[1] = 7                             # 3 categories
    codes[...] = values


write(f"{pending}/bad_categorical_code_out_of_range.h5ad", h5ad_bytes(small_adata(), code_out_of_range))
print("seeds written")
