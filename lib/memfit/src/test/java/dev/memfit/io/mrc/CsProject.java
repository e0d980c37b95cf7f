package dev.memfit.io.mrc;

import dev.memfit.PythonPeer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A small cryoSPARC project, written with numpy and mrcfile the way cryoSPARC lays one out, for side-by-side checks.
 *
 * <p>Where the layout comes from: the {@code .cs} files are numpy structured arrays saved with {@code np.save}, as
 * cryosparc-tools' {@code Dataset.save} writes them ({@code cryosparc/dataset/__init__.py}: {@code NUMPY_FORMAT},
 * strings turned into fixed-length bytes {@code |S..} by {@code Column.to_fixed}). Their fields, types and order are
 * those of real cryoSPARC files in cryoDRGN's test data ({@code tests/data/empiar_10076_7.cs}, an import:
 * {@code uid}, {@code blob/path|idx|shape|psize_A|sign|import_sig}, {@code ctf/...};
 * {@code cryosparc_P12_J24_001_particles.cs}, a refinement: {@code blob/...}, {@code ctf/...},
 * {@code alignments3D/...}; {@code cryosparc_J2_particles_exported.cs}, an export: {@code blob}, {@code ctf},
 * {@code alignments2D} fields in one file, every path starting with {@code >}) and of cryosparc-tools' test fixtures
 * ({@code tests/conftest.py}: the passthrough file's {@code location/...} fields). Paths are written from the project
 * folder ({@code J3/extract/...}); cryoDRGN ({@code cryodrgn/source.py}, {@code CsSource}) and pyem
 * ({@code pyem/metadata/cryosparc2.py}) drop a leading {@code >}, which an exported {@code .cs} puts before paths
 * that start from its own folder (pyem issue 102, by a cryoSPARC developer: exported data is "located adjacent to"
 * the {@code .cs}).
 *
 * <pre>
 * relion/Extract/job004/Micrographs/mic00{1,2}.mrcs   the user's stacks, outside the project (5 and 4 images)
 * P1/J2/imported/0..0N_mic00N.mrcs                    symbolic links to them (an import links, it does not copy)
 * P1/J2/J2_imported_particles.cs                      the import's particles: blob, ctf
 * P1/J3/extract/00N_mic_particles.mrc                 extracted stacks: .mrc with many sections (7, 6, 5 images;
 *                                                     the last one float16, cryoSPARC's 16-bit output)
 * P1/J3/J3_particles.cs, J3_passthrough_particles.cs  the extraction: blob and location, then ctf passed through
 * P1/J5/J5_particles.cs                               2D classification of particles of both: alignments2D only
 * P1/J5/J5_passthrough_particles.cs                   its blob and ctf, rows mixing both jobs' stacks
 * P1/exports/groups/P1_J5_particles/                  J5's particles exported: one .cs with '>' paths, the stacks
 *     P1_J5_particles_exported.cs, J2/..., J3/...     beside it as links
 * P1/exports/groups/P1_J5_bare/P1_J5_particles_exported.cs   the same .cs without the stacks beside it
 * </pre>
 *
 * @param root the folder holding {@code relion/} and the project {@code P1/}
 */
public record CsProject(Path root) {

    /** The particle files of the project, relative to {@link #root()}. */
    public static final List<String> PARTICLE_FILES = List.of(
            "P1/J2/J2_imported_particles.cs",
            "P1/J3/J3_particles.cs",
            "P1/J5/J5_particles.cs",
            "P1/J5/J5_passthrough_particles.cs",
            "P1/exports/groups/P1_J5_particles/P1_J5_particles_exported.cs",
            "P1/exports/groups/P1_J5_bare/P1_J5_particles_exported.cs");
    /** The image side in pixels. */
    public static final int SIDE = 16;
    /** Particles of the import, the extraction and the 2D classification. */
    public static final int IMPORTED = 9;
    /** Particles extracted. */
    public static final int EXTRACTED = 18;
    /** Particles of J5 (a mix of both). */
    public static final int CLASSIFIED = 14;

    /**
     * Writes the project.
     *
     * @param root the folder to write into, created
     * @return the project
     * @throws IOException when the folder cannot be made
     */
    public static CsProject make(Path root) throws IOException {
        Files.createDirectories(root);
        assertEquals("ok", PythonPeer.run("""
                import os, sys, numpy as np, mrcfile
                root = sys.argv[1]
                P = root + '/P1'
                rng = np.random.default_rng(24)
                S = 16

                def stack(path, n, dtype=np.float32):
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    data = rng.normal(0, 1, (n, S, S)) + np.arange(n)[:, None, None] * 0.5
                    with mrcfile.new(path, overwrite=True) as m:
                        m.set_data(data.astype(dtype))
                        m.voxel_size = 1.31
                        if path.endswith('.mrcs'):
                            m.set_image_stack()

                def save(path, rows):
                    # a file object, as cryosparc-tools saves: np.save would add .npy to a name ending in .cs
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, 'wb') as out:
                        np.save(out, rows)

                def link(target, name):
                    os.makedirs(os.path.dirname(name), exist_ok=True)
                    os.symlink(os.path.relpath(target, os.path.dirname(name)), name)

                # dtype fields as in real cryoSPARC files (cryoDRGN's tests/data, cryosparc-tools' tests/conftest.py)
                def blob(n, extra=()):
                    return [('blob/path', 'S%d' % n), ('blob/idx', '<u4'), ('blob/shape', '<u4', (2,)),
                            ('blob/psize_A', '<f4'), ('blob/sign', '<f4')] + list(extra)
                CTF = [('ctf/type', 'S9'), ('ctf/exp_group_id', '<u4'), ('ctf/accel_kv', '<f4'), ('ctf/cs_mm', '<f4'),
                       ('ctf/amp_contrast', '<f4'), ('ctf/df1_A', '<f4'), ('ctf/df2_A', '<f4'),
                       ('ctf/df_angle_rad', '<f4'), ('ctf/phase_shift_rad', '<f4'), ('ctf/scale', '<f4'),
                       ('ctf/scale_const', '<f4'), ('ctf/shift_A', '<f4', (2,)), ('ctf/tilt_A', '<f4', (2,)),
                       ('ctf/trefoil_A', '<f4', (2,)), ('ctf/tetra_A', '<f4', (4,)), ('ctf/anisomag', '<f4', (4,)),
                       ('ctf/bfactor', '<f4')]
                LOCATION = [('location/micrograph_uid', '<u8'), ('location/exp_group_id', '<u4'),
                            ('location/micrograph_path', 'S40'), ('location/micrograph_shape', '<u4', (2,)),
                            ('location/center_x_frac', '<f4'), ('location/center_y_frac', '<f4'),
                            ('location/min_dist_A', '<f4')]
                A2D = [('alignments2D/split', '<u4'), ('alignments2D/shift', '<f4', (2,)), ('alignments2D/pose', '<f4'),
                       ('alignments2D/psize_A', '<f4'), ('alignments2D/error', '<f4'), ('alignments2D/error_min', '<f4'),
                       ('alignments2D/resid_pow', '<f4'), ('alignments2D/slice_pow', '<f4'),
                       ('alignments2D/image_pow', '<f4'), ('alignments2D/cross_cor', '<f4'),
                       ('alignments2D/alpha', '<f4'), ('alignments2D/alpha_min', '<f4'), ('alignments2D/weight', '<f4'),
                       ('alignments2D/pose_ess', '<f4'), ('alignments2D/shift_ess', '<f4'),
                       ('alignments2D/class_posterior', '<f4'), ('alignments2D/class', '<u4'),
                       ('alignments2D/class_ess', '<f4')]

                def table(fields, uids):
                    t = np.zeros(len(uids), dtype=[('uid', '<u8')] + fields)
                    t['uid'] = uids
                    for name in t.dtype.names[1:]:
                        kind = t.dtype[name].base.kind
                        if kind == 'f':
                            t[name] = rng.normal(1, 0.1, t[name].shape)
                        elif kind == 'u' and name != 'blob/idx':
                            t[name] = rng.integers(0, 3, t[name].shape)
                    if 'ctf/type' in t.dtype.names:
                        t['ctf/type'] = b'spline'
                    if 'blob/shape' in t.dtype.names:
                        t['blob/shape'] = S
                        t['blob/sign'] = -1
                    return t

                def copy(into, source):
                    for name in source.dtype.names:
                        if name in into.dtype.names:
                            into[name] = source[name]
                    return into

                # J2: an import of the user's RELION stacks, linked into the project
                imported = []
                for m, n in [(1, 5), (2, 4)]:
                    stack(f'{root}/relion/Extract/job004/Micrographs/mic{m:03d}.mrcs', n)
                    name = f'J2/imported/{rng.integers(10**18):021d}_mic{m:03d}.mrcs'
                    link(f'{root}/relion/Extract/job004/Micrographs/mic{m:03d}.mrcs', f'{P}/{name}')
                    imported += [(name, i) for i in range(n)]
                uids = rng.integers(0, 2**64 - 1, len(imported), dtype=np.uint64, endpoint=True)
                j2 = table(blob(60, [('blob/import_sig', '<u8')]) + CTF, uids)
                j2['blob/path'] = [p for p, _ in imported]
                j2['blob/idx'] = [i for _, i in imported]
                save(f'{P}/J2/J2_imported_particles.cs', j2)

                # J3: extraction into .mrc stacks of many sections, the last in float16
                extracted = []
                for m, n in [(1, 7), (2, 6), (3, 5)]:
                    name = f'J3/extract/{m:03d}_14sep05c_{m:05d}hl_particles.mrc'
                    stack(f'{P}/{name}', n, np.float16 if m == 3 else np.float32)
                    extracted += [(name, i) for i in range(n)]
                uids = rng.integers(0, 2**63, len(extracted), dtype=np.uint64)
                j3 = table(blob(60) + LOCATION, uids)
                j3['blob/path'] = [p for p, _ in extracted]
                j3['blob/idx'] = [i for _, i in extracted]
                j3['location/micrograph_path'] = b'J1/motioncorrected/mic.mrc'
                save(f'{P}/J3/J3_particles.cs', j3)
                save(f'{P}/J3/J3_passthrough_particles.cs', table(CTF, uids))

                # J5: 2D classification of some of both: its own file has alignments2D, the passthrough blob and ctf
                pool = [(j2, k) for k in range(len(j2))] + [(j3, k) for k in range(len(j3))]
                chosen = [pool[k] for k in rng.permutation(len(pool))[:14]]
                uids = np.array([t['uid'][k] for t, k in chosen], dtype=np.uint64)
                j5 = table(A2D, uids)
                j5pt = table(blob(60) + CTF, uids)
                for r, (t, k) in enumerate(chosen):
                    j5pt['blob/path'][r] = t['blob/path'][k]
                    j5pt['blob/idx'][r] = t['blob/idx'][k]
                save(f'{P}/J5/J5_particles.cs', j5)
                save(f'{P}/J5/J5_passthrough_particles.cs', j5pt)

                # J5 exported: one .cs with every field, paths from its own folder marked '>', the stacks linked beside
                merged = copy(copy(table(blob(61) + CTF + A2D, uids), j5pt), j5)
                merged['blob/path'] = [b'>' + p for p in j5pt['blob/path']]
                group = f'{P}/exports/groups/P1_J5_particles'
                save(f'{group}/P1_J5_particles_exported.cs', merged)
                for p in sorted(set(j5pt['blob/path'])):
                    link(f'{P}/{p.decode()}', f'{group}/{p.decode()}')
                save(f'{P}/exports/groups/P1_J5_bare/P1_J5_particles_exported.cs', merged)
                print('ok')
                """, root));
        return new CsProject(root);
    }

    /**
     * The float64 sum of each particle of a {@code .cs}, in row order, as mrcfile reads the image at
     * ({@code blob/path}, {@code blob/idx}) (the reference: numpy and a join by uid of its own, not memfit's): a
     * job's file without {@code blob} fields takes them from its passthrough file by uid; a path with a leading
     * {@code >} starts from the file's folder (or, when the stacks are not beside it, from the project folder), others
     * from the project folder {@code P1}.
     *
     * @param cs a particle file, relative to {@link #root()}
     * @return one sum per particle
     */
    public double[] referenceSums(String cs) {
        String out = PythonPeer.run("""
                import os, sys, numpy as np, mrcfile
                root, cs = sys.argv[1], sys.argv[2]
                rows = np.load(f'{root}/{cs}')
                if 'blob/path' not in rows.dtype.names:
                    other = np.load(f'{root}/{cs}'.replace('_particles', '_passthrough_particles'))
                    at = {u: k for k, u in enumerate(other['uid'])}
                    rows = other[[at[u] for u in rows['uid']]]
                stacks = {}
                for path, idx in zip(rows['blob/path'], rows['blob/idx']):
                    path = path.decode()
                    file = os.path.join(f'{root}/P1', path.lstrip('>'))
                    beside = os.path.join(os.path.dirname(f'{root}/{cs}'), path.lstrip('>'))
                    if path.startswith('>') and os.path.exists(beside):
                        file = beside
                    if file not in stacks:
                        stacks[file] = mrcfile.open(file, permissive=True).data
                    print(repr(float(stacks[file][idx].astype('float64').sum())))
                """, root, cs);
        return out.lines().mapToDouble(Double::parseDouble).toArray();
    }
}
