package dev.memfit.io.mrc;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.storage.Storage;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** MRC2014 both directions against Debian's mrcfile, and each kind of bad file. */
class MrcTest {

    private static final int NX = 6;
    private static final int NY = 4;
    private static final int NZ = 5;

    /** Pixel (z, y, x) holds z*100 + y*10 + x, minus 250 for signed modes so negatives are covered. */
    private static float value(String mode, long z, long y, long x) {
        float v = z * 100 + y * 10 + x;
        return mode.equals("0") ? (v % 200) - 100 : mode.equals("6") ? v : mode.equals("12") ? (v - 250) / 4f : v - 250;
    }

    private static final String WRITE_WITH_MRCFILE = """
            import sys, numpy as np, mrcfile
            d = sys.argv[1]
            types = {'0': np.int8, '1': np.int16, '2': np.float32, '6': np.uint16, '12': np.float16}
            z, y, x = np.meshgrid(np.arange(5), np.arange(4), np.arange(6), indexing='ij')
            v = (z * 100 + y * 10 + x).astype(np.float64)
            for mode, t in types.items():
                data = {'0': (v % 200) - 100, '6': v, '12': (v - 250) / 4}.get(mode, v - 250).astype(t)
                for ext in (False, True):
                    name = f'{d}/m{mode}{"_ext" if ext else ""}.mrcs'
                    with mrcfile.new(name, overwrite=True) as mrc:
                        mrc.set_data(data)
                        mrc.set_image_stack()
                        mrc.voxel_size = 1.5
                        if ext:
                            mrc.set_extended_header(np.arange(25, dtype=np.int32))
                    if mode == '2' and not ext:
                        # the same file in big-endian order, built by hand: swap each header word and the data
                        raw = bytearray(open(name, 'rb').read())
                        words = np.frombuffer(bytes(raw[:224]), dtype='<u4').byteswap()
                        raw[:224] = words.tobytes()
                        raw[104:108] = open(name, 'rb').read()[104:108]
                        raw[208:212] = b'MAP '
                        raw[212:216] = bytes([0x11, 0x11, 0, 0])
                        raw[1024:] = np.frombuffer(bytes(raw[1024:]), dtype='<f4').astype('>f4').tobytes()
                        open(f'{d}/m2_be.mrcs', 'wb').write(raw)
            print('ok')
            """;

    @Test
    void readsWhatMrcfileWrites(@TempDir Path dir) {
        assertEquals("ok", PythonPeer.run(WRITE_WITH_MRCFILE, dir));
        int files = 0;
        try (Storage storage = Storage.local(); Arena arena = Arena.ofConfined()) {
            for (String name : new String[]{"m0", "m1", "m2", "m6", "m12", "m0_ext", "m1_ext", "m2_ext", "m6_ext", "m12_ext", "m2_be"}) {
                Path file = dir.resolve(name + ".mrcs");
                String mode = name.substring(1).split("_")[0];
                MrcHeader header = Mrc.readHeader(file);
                assertEquals(NX, header.nx(), name);
                assertEquals(NY, header.ny(), name);
                assertEquals(NZ, header.nz(), name);
                assertEquals(1.5, header.voxelSize(), 1e-6, name);
                assertEquals(name.endsWith("_ext") ? 100 : 0, header.extendedHeaderBytes(), name);
                assertEquals(name.endsWith("_be") ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN, header.byteOrder(), name);
                MemorySegment images = arena.allocate(3L * NX * NY * Float.BYTES);
                try (MrcReader reader = Mrc.open(file, storage)) {
                    assertEquals(header, reader.header());
                    reader.readImages(2, 3, images);
                }
                for (int z = 0; z < 3; z++) {
                    for (int y = 0; y < NY; y++) {
                        for (int x = 0; x < NX; x++) {
                            float got = images.getAtIndex(ValueLayout.JAVA_FLOAT, ((long) z * NY + y) * NX + x);
                            assertEquals(value(mode, z + 2, y, x), got, 0f, name + " at " + (z + 2) + "," + y + "," + x);
                        }
                    }
                }
                files++;
            }
        }
        assertEquals(11, files);
    }

    @Test
    void mrcfileReadsAndValidatesWhatWeWrite(@TempDir Path dir) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment images = arena.allocate((long) NZ * NY * NX * Float.BYTES);
            for (String mode : new String[]{"0", "1", "2", "6", "12"}) {
                for (int z = 0; z < NZ; z++) {
                    for (int y = 0; y < NY; y++) {
                        for (int x = 0; x < NX; x++) {
                            images.setAtIndex(ValueLayout.JAVA_FLOAT, ((long) z * NY + y) * NX + x, value(mode, z, y, x));
                        }
                    }
                }
                DType dtype = switch (mode) {
                    case "0" -> DType.INT8;
                    case "1" -> DType.INT16;
                    case "6" -> DType.UINT16;
                    case "12" -> DType.FLOAT16;
                    default -> DType.FLOAT32;
                };
                Mrc.write(dir.resolve("w" + mode + ".mrcs"), MrcHeader.builder().setWidth(NX).setHeight(NY).setImages(NZ)
                        .optDType(dtype).optVoxelSize(2.25).build(), images);
            }
        }
        String out = PythonPeer.run("""
                import sys, io, contextlib, numpy as np, mrcfile
                d = sys.argv[1]
                z, y, x = np.meshgrid(np.arange(5), np.arange(4), np.arange(6), indexing='ij')
                v = (z * 100 + y * 10 + x).astype(np.float64)
                bad = []
                for mode in ('0', '1', '2', '6', '12'):
                    name = f'{d}/w{mode}.mrcs'
                    report = io.StringIO()
                    with contextlib.redirect_stdout(report):
                        valid = mrcfile.validate(name)
                    # mrcfile 1.4 computes the RMS of float16 data in float16 and overflows to inf: its own bug
                    valid = valid or (mode == '12' and 'RMS deviation is inf' in report.getvalue())
                    with mrcfile.open(name, permissive=False) as mrc:
                        want = {'0': (v % 200) - 100, '6': v, '12': (v - 250) / 4}.get(mode, v - 250)
                        ok = (valid and mrc.is_image_stack() and int(mrc.header.mode) == int(mode)
                              and mrc.data.shape == (5, 4, 6) and np.allclose(mrc.data.astype(np.float64), want)
                              and abs(float(mrc.voxel_size.x) - 2.25) < 1e-6
                              and abs(float(mrc.header.dmax) - want.max()) < 1e-3
                              and abs(float(mrc.header.dmean) - want.mean()) < 1e-2)
                    if not ok:
                        bad.append(mode + ': ' + report.getvalue().strip() + f' (valid={valid}, mode={int(mrc.header.mode)}, dmax={float(mrc.header.dmax)}, dmean={float(mrc.header.dmean)}, want {want.max()} {want.mean()}, stack={mrc.is_image_stack()})')
                print('; '.join(bad) if bad else 'all valid')
                """, dir);
        assertEquals("all valid", out);
    }

    private static Path stack(Path dir) {
        try (Arena arena = Arena.ofConfined()) {
            return Mrc.write(dir.resolve("ok.mrcs"), MrcHeader.builder().setWidth(NX).setHeight(NY).setImages(NZ).build(),
                    arena.allocate((long) NZ * NY * NX * Float.BYTES));
        }
    }

    @Test
    void truncatedStack(@TempDir Path dir) throws IOException {
        byte[] bytes = Files.readAllBytes(stack(dir));
        Path cut = dir.resolve("cut.mrcs");
        Files.write(cut, Arrays.copyOf(bytes, bytes.length - NX * NY * 4 - 7));
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Mrc.readHeader(cut));
        assertTrue(e.getMessage().startsWith(cut + " at byte 1024: expected 5 images of 6x4 f4"), e.getMessage());
        assertTrue(e.getMessage().contains("(truncated?)"), e.getMessage());
    }

    @Test
    void imageCountDisagreesWithSize(@TempDir Path dir) throws IOException {
        byte[] bytes = Files.readAllBytes(stack(dir));
        bytes[8] = 7; // NZ = 7 in a file holding 5 images
        Path wrong = dir.resolve("wrong.mrcs");
        Files.write(wrong, bytes);
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Mrc.readHeader(wrong));
        assertTrue(e.getMessage().contains("expected 7 images of 6x4"), e.getMessage());
        assertTrue(e.getMessage().contains("room for 5 images"), e.getMessage());
    }

    /**
     * Header sizes that overflow 64 bits are refused from the header alone: NX = NY = 2^30 with 16 float32 images
     * used to wrap around to a size that matched the file, and the reader then tried to allocate 2^62 bytes.
     */
    @Test
    void headerSizesThatOverflowAreRefusedBeforeAnyAllocation(@TempDir Path dir) {
        assertEquals("ok", PythonPeer.run("""
                import sys, struct, numpy as np, mrcfile
                d = sys.argv[1]
                with mrcfile.new(f'{d}/base.mrcs', overwrite=True) as mrc:
                    mrc.set_data(np.zeros((16, 4, 4), np.float32))
                    mrc.set_image_stack()
                raw = bytearray(open(f'{d}/base.mrcs', 'rb').read())
                def patched(name, nx, ny, nz=16, nsymbt=0):
                    b = bytearray(raw)
                    struct.pack_into('<3i', b, 0, nx, ny, nz)
                    struct.pack_into('<i', b, 92, nsymbt)
                    open(f'{d}/{name}', 'wb').write(b)
                patched('wrap.mrcs', 1 << 30, 1 << 30)
                patched('max.mrcs', 2**31 - 1, 2**31 - 1, 1)
                patched('huge.mrcs', 1 << 20, 1 << 20)
                patched('ext.mrcs', 4, 4, 16, 2**31 - 1)
                print('ok')
                """, dir));
        Path wrap = dir.resolve("wrap.mrcs");
        String message = wrap + " at byte 0: expected a header whose sizes fit in a file (NX*NY*NZ*bytes per pixel "
                + "below 2^63), found NX=1073741824 NY=1073741824 NZ=16 mode 2: 16 images of 1073741824x1073741824 f4 "
                + "is more than 2^63 bytes of data, the file has 1,024 bytes after the header";
        assertEquals(message, assertThrows(InvalidFileException.class, () -> Mrc.readHeader(wrap)).getMessage());
        assertEquals(message, assertThrows(InvalidFileException.class, () -> Mrc.open(wrap)).getMessage());
        assertEquals(message, assertThrows(InvalidFileException.class, () -> ParticleStack.open(wrap)).getMessage());
        Path max = dir.resolve("max.mrcs");
        assertTrue(assertThrows(InvalidFileException.class, () -> Mrc.readHeader(max)).getMessage()
                .contains("found NX=2147483647 NY=2147483647 NZ=1 mode 2: 1 images of 2147483647x2147483647 f4 is more than 2^63 bytes"));
        // no overflow, but far more than the file holds: compared with the file size, not allocated
        Path huge = dir.resolve("huge.mrcs");
        assertEquals(huge + " at byte 1024: expected 16 images of 1048576x1048576 f4 (70368744178688 bytes in all, "
                + "with 0 bytes of extended header), found 2048 bytes (truncated?)",
                assertThrows(InvalidFileException.class, () -> Mrc.readHeader(huge)).getMessage());
        Path ext = dir.resolve("ext.mrcs");
        assertEquals(ext + " at byte 92: expected an extended header (NSYMBT) that fits in the file, found "
                + "NSYMBT=2147483647 in a file of 2048 bytes",
                assertThrows(InvalidFileException.class, () -> Mrc.readHeader(ext)).getMessage());
        dev.memfit.MemfitException built = assertThrows(dev.memfit.MemfitException.class, () -> MrcHeader.builder()
                .setWidth(Integer.MAX_VALUE).setHeight(Integer.MAX_VALUE).setImages(Integer.MAX_VALUE).build());
        assertTrue(built.getMessage().endsWith("make more than 2^63 bytes; use fewer or smaller images"), built.getMessage());
    }

    @Test
    void unknownMode(@TempDir Path dir) throws IOException {
        byte[] bytes = Files.readAllBytes(stack(dir));
        bytes[12] = 4; // mode 4: complex float32, not supported
        Path complex = dir.resolve("complex.mrcs");
        Files.write(complex, bytes);
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Mrc.readHeader(complex));
        assertEquals(complex + " at byte 12: expected MRC mode 0, 1, 2, 6 or 12, found mode 4", e.getMessage());
    }

    @Test
    void notAnMrcFile(@TempDir Path dir) throws IOException {
        Path text = dir.resolve("notes.mrcs");
        Files.writeString(text, "particles".repeat(200));
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Mrc.readHeader(text));
        assertTrue(e.getMessage().contains("expected an MRC header"), e.getMessage());
        Path tiny = dir.resolve("tiny.mrcs");
        Files.writeString(tiny, "x");
        assertTrue(assertThrows(InvalidFileException.class, () -> Mrc.readHeader(tiny)).getMessage()
                .contains("expected an MRC header of 1024 bytes, found a file of 1 bytes"));
    }

    @Test
    void headerBuilderValidatesAndReaderReadsWhatWasWritten(@TempDir Path dir) {
        MrcHeader header = MrcHeader.builder().setWidth(NX).setHeight(NY).setImages(NZ).build();
        assertEquals(new MrcHeader(NX, NY, NZ, DType.FLOAT32, ByteOrder.LITTLE_ENDIAN, 0, 1.0), header,
                "defaults: float32, little-endian, 1 Angstrom");
        dev.memfit.MemfitException noImages = assertThrows(dev.memfit.MemfitException.class,
                () -> MrcHeader.builder().setWidth(NX).setHeight(NY).build());
        assertTrue(noImages.getMessage().startsWith("setImages(n) is required"), noImages.getMessage());
        dev.memfit.MemfitException noSize = assertThrows(dev.memfit.MemfitException.class,
                () -> MrcHeader.builder().setImages(3).build());
        assertTrue(noSize.getMessage().startsWith("setWidth(pixels) and setHeight(rows) are required"), noSize.getMessage());
        dev.memfit.MemfitException mode = assertThrows(dev.memfit.MemfitException.class,
                () -> MrcHeader.builder().setWidth(NX).setHeight(NY).setImages(1).optDType(DType.INT64).build());
        assertTrue(mode.getMessage().contains("MRC has no mode for INT64"), mode.getMessage());

        Path file = stack(dir);
        try (MrcReader reader = Mrc.open(file); Arena arena = Arena.ofConfined()) {
            assertEquals(header, reader.header());
            MemorySegment image = arena.allocate((long) NX * NY * Float.BYTES);
            reader.readImages(NZ - 1, 1, image);
            InvalidFileException past = assertThrows(InvalidFileException.class, () -> reader.readImages(NZ - 1, 2, image));
            assertTrue(past.getMessage().contains("a request for images [4, 6)"), past.getMessage());
        }
    }
}
