package dev.memfit.io.mrc;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ObservedStorage;
import dev.memfit.PythonPeer;
import dev.memfit.io.Formats;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyRecords;
import dev.memfit.io.storage.Storage;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * cryoSPARC {@code .cs} files that are damaged, incomplete or unusual, written with numpy in cryoSPARC's field layout
 * (see {@link CsProject} for where it comes from) beside a project {@code P/} with two extracted stacks: each is read
 * or refused with one message naming the file, the byte offset or row, what was expected and what was found.
 */
class CsFileTest {

    @TempDir
    static Path dir;

    private static Path project;

    @BeforeAll
    static void write() {
        project = dir.resolve("P");
        assertEquals("ok", PythonPeer.run("""
                import os, sys, numpy as np, mrcfile
                P = sys.argv[1]
                os.makedirs(P + '/J1/extract')
                for name, n in [('a', 7), ('b', 3)]:
                    with mrcfile.new(f'{P}/J1/extract/{name}_particles.mrc') as m:
                        m.set_data((np.arange(n * 16).reshape(n, 4, 4) + 1000 * (name == 'b')).astype(np.float32))
                rng = np.random.default_rng(3)
                BLOB = [('uid', '<u8'), ('blob/path', 'S26'), ('blob/idx', '<u4'), ('blob/shape', '<u4', (2,)),
                        ('blob/psize_A', '<f4'), ('blob/sign', '<f4')]
                CTF = [('uid', '<u8'), ('ctf/type', 'S9'), ('ctf/df1_A', '<f4'), ('ctf/df2_A', '<f4')]
                rows = [('J1/extract/a_particles.mrc', i) for i in range(7)] + [('J1/extract/b_particles.mrc', i) for i in range(3)]
                uids = rng.integers(0, 2**64 - 1, len(rows), dtype=np.uint64, endpoint=True)

                def save(name, array):
                    os.makedirs(os.path.dirname(f'{P}/{name}'), exist_ok=True)
                    with open(f'{P}/{name}', 'wb') as out:
                        np.save(out, array, allow_pickle=True)

                def table(fields, rows, uids=uids):
                    t = np.zeros(len(rows), dtype=fields)
                    t['uid'] = uids
                    if 'blob/path' in t.dtype.names:
                        t['blob/path'] = [p for p, _ in rows]
                        t['blob/idx'] = [i for _, i in rows]
                    return t

                save('J2/J2_particles.cs', table(BLOB, rows))
                bad = table(BLOB, rows)
                bad['blob/path'][3] = 'J9/extract/missing.mrc'
                save('J2/missing_particles.cs', bad)
                bad = table(BLOB, rows)
                bad['blob/idx'][5] = 7
                save('J2/past_particles.cs', bad)
                # a job whose own file lacks blob: in its passthrough file, the same uids in the same order, or not
                save('J4/J4_particles.cs', table([('uid', '<u8'), ('alignments2D/class', '<u4')], rows))
                save('J4/J4_passthrough_particles.cs', table(BLOB + CTF[1:], rows))
                save('J6/J6_002_particles.cs', table([('uid', '<u8'), ('alignments2D/class', '<u4')], rows))
                order = np.arange(len(rows))[::-1]
                save('J6/J6_passthrough_particles.cs', table(BLOB, [rows[k] for k in order], uids[order]))
                save('J7/J7_particles.cs', table(CTF, rows))
                # unicode paths, a big-endian int64 index, aligned fields (numpy's padding) and a titled field
                odd = np.zeros(len(rows), dtype=np.dtype([('uid', '<u8'), ('flag', 'u1'), ('blob/idx', '>i8'),
                                                         (('the stack', 'blob/path'), '<U30')], align=True))
                odd['blob/path'] = ['>' + p for p, _ in rows]
                odd['blob/idx'] = [i for _, i in rows]
                save('J8/unicode_particles.cs', odd)
                nopath = np.zeros(2, dtype=[('uid', '<u8'), ('blob/path', '<u8'), ('blob/idx', '<u4')])
                save('J8/numeric_particles.cs', nopath)
                objects = np.zeros(2, dtype=[('uid', '<u8'), ('blob/path', 'O'), ('blob/idx', '<u4')])
                objects['blob/path'] = ['J1/extract/a_particles.mrc'] * 2
                save('J8/objects_particles.cs', objects)
                save('J8/empty_particles.cs', table(BLOB, [], uids[:0]))
                save('J8/square_particles.cs', table(BLOB, rows).reshape(2, 5))
                save('plain.npy', np.arange(12, dtype='<f4').reshape(3, 4))
                save('records.npy', table(BLOB, rows))
                print('ok')
                """, project));
    }

    @Test
    void aRowNamingAMissingStackIsOneLineWithTheRowAndTheFoldersTried() {
        Path cs = project.resolve("J2/missing_particles.cs");
        MemfitException e = assertThrows(MemfitException.class, () -> ParticleStack.open(cs));
        Path folder = cs.toAbsolutePath().normalize().getParent();
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
        assertTrue(e.getMessage().startsWith(cs + " row 3: expected an existing stack 'J9/extract/missing.mrc', found "
                + "none under " + folder + ", " + folder.getParent() + ", " + folder.getParent().getParent() + ", "),
                e.getMessage());
        assertTrue(e.getMessage().endsWith("(the cryoSPARC project folder) with --datadir or optDataDir"), e.getMessage());
        MemfitException inData = assertThrows(MemfitException.class, () -> ParticleStack.open(cs, project));
        assertEquals(cs + " row 3: expected an existing stack 'J9/extract/missing.mrc', found none under "
                + project.toAbsolutePath().normalize() + "; the file name alone was tried there too", inData.getMessage());
        assertEquals(10, ParticleStack.open(project.resolve("J2/J2_particles.cs")).size());
    }

    @Test
    void anIndexPastTheEndOfItsStackFailsWithItsRowAndByte() {
        Path cs = project.resolve("J2/past_particles.cs");
        NpyRecords header = Npy.readRecords(cs);
        long at = header.rowOffset(5) + header.field("blob/idx").offset();
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> ParticleStack.open(cs));
        assertEquals(cs + " at byte " + at + ": expected on row 5 a blob/idx in [0, 7) of "
                + project.toAbsolutePath().normalize().resolve("J1/extract/a_particles.mrc") + ", found index 7",
                e.getMessage());
        assertEquals(at, e.offset());
    }

    @Test
    void aTruncatedCsSaysHowManyRowsAreThere() throws IOException {
        Path cs = dir.resolve("truncated/J2_particles.cs");
        Files.createDirectories(cs.getParent());
        Files.copy(project.resolve("J2/J2_particles.cs"), cs);
        NpyRecords header = Npy.readRecords(cs);
        long size = Files.size(cs);
        try (FileChannel channel = FileChannel.open(cs, StandardOpenOption.WRITE)) {
            channel.truncate(size - 10);
        }
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> ParticleStack.open(cs));
        assertEquals(String.format(Locale.ROOT, "%s at byte %d: expected 10 rows of %,d bytes (a file of %,d bytes), "
                + "found a file of %,d bytes (truncated: 9 whole rows)", cs, header.dataOffset(), header.rowBytes(), size,
                size - 10),
                e.getMessage());
    }

    @Test
    void aJobFileWithoutBlobFieldsReadsThemFromItsPassthroughFileInTheSameOrder() {
        ParticleStack joined = ParticleStack.open(project.resolve("J4/J4_particles.cs"));
        ParticleStack direct = ParticleStack.open(project.resolve("J2/J2_particles.cs"));
        assertEquals(direct.files(), joined.files());
        for (long i = 0; i < 10; i++) {
            assertEquals(direct.fileOf(i), joined.fileOf(i));
            assertEquals(direct.imageOf(i), joined.imageOf(i));
        }
        Path reversed = project.resolve("J6/J6_passthrough_particles.cs");
        NpyRecords header = Npy.readRecords(reversed);
        InvalidFileException e = assertThrows(InvalidFileException.class,
                () -> ParticleStack.open(project.resolve("J6/J6_002_particles.cs")));
        assertTrue(e.getMessage().startsWith(reversed + " at byte " + header.rowOffset(0) + ": expected on row 0 the uid "
                + "of J6_002_particles.cs's row 0, "), e.getMessage());
        assertTrue(e.getMessage().contains("(a job's two files list the same particles in the same order), found "),
                e.getMessage());
        assertEquals(10, ParticleStack.open(reversed).size());
    }

    @Test
    void aCsWithoutBlobFieldsSaysWhichFieldsItHas() {
        Path ctf = project.resolve("J7/J7_particles.cs");
        assertEquals(ctf + " at byte 10: expected a cryoSPARC particle file with the fields blob/path and blob/idx (each "
                + "particle's stack and image), found no blob/path and blob/idx among the fields uid, ctf/type, "
                + "ctf/df1_A, ctf/df2_A; nor a passthrough file J7_passthrough_particles.cs beside it",
                assertThrows(InvalidFileException.class, () -> ParticleStack.open(ctf)).getMessage());
        assertEquals(ctf + " at byte 10: expected a cryoSPARC particle file with the fields blob/path and blob/idx (each "
                + "particle's stack and image), found no blob/path and blob/idx among the fields uid, ctf/type, "
                + "ctf/df1_A, ctf/df2_A; nor a passthrough file J7_passthrough_particles.cs beside it",
                assertThrows(InvalidFileException.class, () -> Formats.open(ctf)).getMessage());
        Path numeric = project.resolve("J8/numeric_particles.cs");
        assertEquals(numeric + " at byte 10: expected blob/path as fixed-length bytes such as '|S61' (as cryoSPARC writes "
                + "it) or unicode '<U61', found 'blob/path' <u8 at +8",
                assertThrows(InvalidFileException.class, () -> ParticleStack.open(numeric)).getMessage());
        Path objects = project.resolve("J8/objects_particles.cs");
        assertEquals(objects + " at byte 10: expected fields of fixed size, found Python objects ('|O') in field "
                + "'blob/path': numpy saved the rows as a pickle, which memfit does not read",
                assertThrows(InvalidFileException.class, () -> ParticleStack.open(objects)).getMessage());
        Path empty = project.resolve("J8/empty_particles.cs");
        assertEquals(empty + ": expected at least one particle, found no rows",
                assertThrows(InvalidFileException.class, () -> ParticleStack.open(empty)).getMessage());
        Path square = project.resolve("J8/square_particles.cs");
        assertEquals(square + " at byte 10: expected a one-dimensional array of rows, as cryoSPARC saves them, found "
                + "shape [2, 5]", assertThrows(InvalidFileException.class, () -> ParticleStack.open(square)).getMessage());
    }

    @Test
    void unicodePathsBigEndianIndicesPaddingAndTitlesAreRead() {
        Path cs = project.resolve("J8/unicode_particles.cs");
        NpyRecords header = Npy.readRecords(cs);
        assertEquals(List.of("uid", "flag", "blob/idx", "blob/path"), header.names());
        assertEquals(16, header.field("blob/idx").offset(), "after 7 bytes of padding");
        assertEquals('U', header.field("blob/path").kind());
        assertEquals(120, header.field("blob/path").itemBytes());
        // '>' paths start from the file's folder, then the folders above: P/J1/extract from P/J8
        ParticleStack stack = ParticleStack.open(cs);
        ParticleStack plain = ParticleStack.open(project.resolve("J2/J2_particles.cs"));
        assertEquals(plain.files(), stack.files());
        for (long i = 0; i < 10; i++) {
            assertEquals(plain.fileOf(i), stack.fileOf(i));
            assertEquals(plain.imageOf(i), stack.imageOf(i));
        }
    }

    @Test
    void cryosparcToolsCompressedFormatIsRefusedByName() throws IOException {
        Path cs = dir.resolve("csdat/J9_particles.cs");
        Files.createDirectories(cs.getParent());
        byte[] header = "{\"length\": 1, \"dtype\": [[\"uid\", \"<u8\"]], \"compression\": \"lz4\"}".getBytes(StandardCharsets.UTF_8);
        ByteBuffer bytes = ByteBuffer.allocate(10 + header.length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        bytes.put(new byte[]{(byte) 0x95, 'C', 'S', 'D', 'A', 'T'}).putInt(header.length).put(header);
        Files.write(cs, bytes.array());
        assertEquals(cs + " at byte 0: expected a .cs in numpy's format (\\x93NUMPY), which cryoSPARC writes for job "
                + "outputs, found cryosparc-tools' compressed CSDAT format, which memfit does not read; save it again "
                + "with Dataset.save(path) (format NUMPY_FORMAT, the default)",
                assertThrows(InvalidFileException.class, () -> ParticleStack.open(cs)).getMessage());
    }

    @Test
    void aPlainNpyIsStillANpyAndRecordsAreFoundByContent() throws IOException {
        Path plain = project.resolve("plain.npy");
        assertEquals(Formats.Format.NPY, Formats.detect(plain));
        assertEquals(3, Formats.open(plain).samples());
        // the extension decides: records named .npy are a .npy, which says what they look like
        Path records = project.resolve("records.npy");
        assertEquals(Formats.Format.NPY, Formats.detect(records));
        MemfitException e = assertThrows(MemfitException.class, () -> Formats.open(records));
        assertTrue(e.getMessage().contains("a structured dtype (records with named fields, 'blob/path' among them: a "
                + "cryoSPARC particle file? name it .cs)"), e.getMessage());
        // without an extension, the content decides
        Path bare = Files.copy(project.resolve("J2/J2_particles.cs"), project.resolve("J2/particles"));
        assertEquals(Formats.Format.CRYOSPARC, Formats.detect(bare));
        assertEquals(10, Formats.open(bare).samples());
        Path bareNpy = Files.copy(plain, project.resolve("plain"));
        assertEquals(Formats.Format.NPY, Formats.detect(bareNpy));
        Path folder = Files.createDirectories(dir.resolve("folder.cs"));
        assertEquals(folder + ": expected a .cs file, found a directory",
                assertThrows(InvalidFileException.class, () -> Formats.detect(folder)).getMessage());
        assertEquals(folder + ": expected a cryoSPARC .cs file, found a folder",
                assertThrows(MemfitException.class, () -> ParticleStack.open(folder)).getMessage());
    }

    @Test
    void passthroughFilesAreNamedAsCryosparcNamesThem() {
        assertEquals(Path.of("P/J5/J5_passthrough_particles.cs"), CryoSparc.passthroughOf(Path.of("P/J5/J5_particles.cs")));
        assertEquals(Path.of("J5_passthrough_particles.cs"), CryoSparc.passthroughOf(Path.of("J5_005_particles.cs")));
        assertEquals(Path.of("cryosparc_P12_J24_passthrough_particles.cs"),
                CryoSparc.passthroughOf(Path.of("cryosparc_P12_J24_001_particles.cs")));
        assertEquals(Path.of("J46_passthrough_particles_selected.cs"),
                CryoSparc.passthroughOf(Path.of("J46_particles_selected.cs")));
        assertNull(CryoSparc.passthroughOf(Path.of("J5_passthrough_particles.cs")));
        assertNull(CryoSparc.passthroughOf(Path.of("particles.cs")));
    }

    /**
     * A {@code .cs} of many rows is streamed: the heap holds an int and a long per particle (the stack's arrays),
     * not a string per row, and a storage sees requests of about 1 MiB.
     */
    @Test
    void manyRowsAreStreamedInMebibyteReadsWithoutAStringPerRow() {
        int rows = 120_000;
        Path folder = dir.resolve("large");
        assertEquals("ok", PythonPeer.run("""
                import os, sys, numpy as np, mrcfile
                d, n = sys.argv[1], int(sys.argv[2])
                os.makedirs(d + '/J3/extract')
                os.makedirs(d + '/J5')
                for s in range(12):
                    with mrcfile.new(f'{d}/J3/extract/{s:03d}_with_a_rather_long_micrograph_name_particles.mrc') as m:
                        m.set_data(np.zeros((n // 12, 2, 2), np.float32))
                t = np.zeros(n, dtype=[('uid', '<u8'), ('blob/path', 'S90'), ('blob/idx', '<u4'), ('blob/shape', '<u4', (2,)),
                                       ('ctf/df1_A', '<f4'), ('alignments3D/pose', '<f4', (3,))])
                t['uid'] = np.arange(n)
                t['blob/path'] = [f'J3/extract/{r // (n // 12):03d}_with_a_rather_long_micrograph_name_particles.mrc'
                                  for r in range(n)]
                t['blob/idx'] = np.arange(n) % (n // 12)
                with open(d + '/J5/J5_particles.cs', 'wb') as out:
                    np.save(out, t)
                print('ok')
                """, folder, rows));
        Path cs = folder.resolve("J5/J5_particles.cs");
        NpyRecords header = Npy.readRecords(cs);
        long dataBytes = header.rows() * header.rowBytes();
        AtomicInteger reads = new AtomicInteger();
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        ParticleStack.open(cs);   // warm: classes, lambdas
        try (Storage counted = new ObservedStorage(Storage.local(), "counted", (file, position, into) -> {
            if (file.equals(cs)) {
                reads.incrementAndGet();
            }
        })) {
            long before = threads.getCurrentThreadAllocatedBytes();
            ParticleStack stack = ParticleStack.open(cs, null, counted);
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            assertEquals(rows, stack.size());
            assertEquals(rows - 1L, stack.imageOf(rows - 1) + (rows / 12) * 11L);
            // the stack's arrays (12 bytes a particle) and a 1 MiB read buffer; a string per row would be ~25 MB more
            assertTrue(allocated < 12L * rows + (4L << 20), allocated + " heap bytes for " + rows + " rows");
            // the magic, the header probe, then the rows about 1 MiB at a time
            long chunkRows = (1 << 20) / header.rowBytes();
            assertEquals(2 + (rows + chunkRows - 1) / chunkRows, reads.get(), dataBytes + " bytes of rows");
        }
    }
}
