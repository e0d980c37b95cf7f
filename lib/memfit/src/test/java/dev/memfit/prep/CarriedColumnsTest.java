package dev.memfit.prep;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.io.anndata.FrameColumn;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.hdf5.H5adWriter;
import dev.memfit.shard.CellTable;
import dev.memfit.shard.ShardWriter;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.Type;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every {@code obs}/{@code var} column comes through preprocessing and sharding unchanged, with its type: checked in
 * anndata/pandas on anndata's own backward-compatibility archives (anndata 0.7's reference categoricals) and on a
 * file anndata 0.8 writes with every dtype a dataframe column can have; a column memfit cannot carry is refused by
 * name before anything is written.
 */
class CarriedColumnsTest {

    /** Debian's python3-anndata ships the files older anndata versions wrote, for its own compatibility tests. */
    private static final Path ARCHIVES = Path.of("/usr/lib/python3/dist-packages/anndata/tests/data/archives");

    @TempDir
    Path dir;

    /** The archive of a version, or the typed file written here. */
    private Path input(String source) {
        if (source.equals("typed")) {
            return typedFile(dir.resolve("typed.h5ad"));
        }
        Path archive = ARCHIVES.resolve(source).resolve("adata.h5ad");
        assertTrue(Files.isRegularFile(archive), archive + " is missing: install python3-anndata (Debian 12, anndata 0.8)");
        return archive;
    }

    /**
     * A file written by anndata 0.8's {@code write_h5ad} with its defaults, whose obs and var hold every dtype: ints
     * and uints of every width at their extremes, float32/float64 with NaN and inf, bool, unique strings (a
     * string-array) and repeated ones (anndata makes them a categorical), categoricals unordered (an unused category,
     * categories out of sorted order), ordered, with missing values, of integers, and of 200 categories (int16
     * codes), and pandas' nullable Int64/Int8/UInt16/boolean (anndata 0.8 writes nullable-integer/-boolean).
     */
    static Path typedFile(Path file) {
        PythonPeer.run("""
                import sys, numpy as np, pandas as pd, anndata, scipy.sparse as sp
                n, g = 40, 30
                rng = np.random.default_rng(7)
                X = sp.csr_matrix(rng.poisson(1.5, size=(n, g)).astype(np.float32))
                def frame(m, prefix):
                    r = np.random.default_rng(len(prefix) + m)
                    d = {}
                    for t in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
                        info = np.iinfo(t)
                        v = r.integers(info.min, info.max, size=m, dtype=t, endpoint=True)
                        v[0] = info.min
                        v[1] = info.max
                        d[t] = v
                    d["float32"] = r.standard_normal(m).astype(np.float32)
                    d["float32"][2] = np.nan
                    d["float64"] = r.standard_normal(m)
                    d["float64"][3] = np.inf
                    d["bool"] = r.integers(0, 2, m).astype(bool)
                    d["str_unique"] = np.array([f"{prefix}_\\u00fc{i}" for i in range(m)], dtype=object)
                    d["str_repeated"] = np.array([["a", "bb", "ccc"][i % 3] for i in range(m)], dtype=object)
                    d["cat_unordered"] = pd.Categorical([["z", "y", "x"][i % 3] for i in range(m)],
                                                        categories=["z", "x", "y", "unused"])
                    d["cat_ordered"] = pd.Categorical([["lo", "mid", "hi"][i % 3] for i in range(m)],
                                                      categories=["lo", "mid", "hi"], ordered=True)
                    d["cat_missing"] = pd.Categorical([["lo", None, "hi"][i % 3] for i in range(m)], categories=["lo", "hi"])
                    d["cat_int"] = pd.Categorical([[30, 10, 20][i % 3] for i in range(m)], categories=[30, 10, 20])
                    d["cat_wide"] = pd.Categorical([f"c{(i * 7) % 200:03d}" for i in range(m)],
                                                   categories=[f"c{k:03d}" for k in range(199, -1, -1)])
                    d["nullable_int"] = pd.array([None if i % 5 == 0 else i - 20 for i in range(m)], dtype="Int64")
                    d["nullable_int8"] = pd.array([None if i % 4 == 0 else i for i in range(m)], dtype="Int8")
                    d["nullable_uint16"] = pd.array([None if i % 6 == 0 else 60000 + i for i in range(m)], dtype="UInt16")
                    d["nullable_bool"] = pd.array([None if i % 3 == 0 else bool(i % 2) for i in range(m)], dtype="boolean")
                    return pd.DataFrame(d, index=[f"{prefix}{i}" for i in range(m)])
                a = anndata.AnnData(X=X, obs=frame(n, "cell"), var=frame(g, "gene"))
                a.write_h5ad(sys.argv[1])
                b = anndata.read_h5ad(sys.argv[1])
                assert str(b.obs["cat_wide"].cat.codes.dtype) == "int16"
                assert str(b.obs["nullable_int"].dtype) == "Int64" and str(b.obs["nullable_bool"].dtype) == "boolean"
                print("ok")
                """, file);
        return file;
    }

    /** Compares every obs column and the obs index, and every var column on the output's genes, in pandas. */
    private static final String COMPARE = """
            import sys, pandas as pd, anndata
            inp = anndata.read_h5ad(sys.argv[1])
            out = anndata.read_h5ad(sys.argv[2])
            pd.testing.assert_index_equal(inp.obs.index, out.obs.index, exact=True)
            for c in inp.obs.columns:
                pd.testing.assert_series_equal(inp.obs[c], out.obs[c], check_exact=True, obj="obs column " + c)
            genes = out.var.index
            assert len(genes) > 0 and genes.isin(inp.var.index).all()
            for c in inp.var.columns:
                pd.testing.assert_series_equal(inp.var.loc[genes, c], out.var[c], check_exact=True, obj="var column " + c)
            assert list(out.obs.columns) == list(inp.obs.columns) + ["n_counts_raw"], list(out.obs.columns)
            assert list(out.var.columns) == list(inp.var.columns) + ["highly_variable", "means", "dispersions",
                                                                     "dispersions_norm"], list(out.var.columns)
            print(len(inp.obs.columns), len(inp.var.columns))
            """;

    @ParameterizedTest
    @ValueSource(strings = {"v0.7.0", "v0.7.8", "typed"})
    void preprocessCarriesEveryColumnWithItsType(String source) {
        Path input = input(source);
        Path output = dir.resolve("processed-" + source + ".h5ad");
        Preprocess.Result result = Preprocess.builder().setInput(input).optHighlyVariable(10)
                .optProgress(ProgressListener.silent()).run(output);
        assertTrue(result.genes() >= 10 && result.genes() < 20, "a subset of the genes: " + result.genes());
        String counts = PythonPeer.run(COMPARE, input, output);
        assertEquals(source.equals("typed") ? "22 22" : "5 5", counts, "obs and var columns compared");
    }

    @ParameterizedTest
    @ValueSource(strings = {"v0.7.0", "v0.7.8", "typed"})
    void shardCellTablesCarryEveryObsColumnWithItsType(String source) {
        Path input = input(source);
        Path shards = dir.resolve("shards-" + source);
        ShardWriter.Result result = ShardWriter.builder().setInput(input).optShardSize(13)
                .optProgress(ProgressListener.silent()).write(shards);
        assertTrue(result.shards() >= 3, "several shards: " + result.shards());
        // pandas reads no Parquet here (Debian 12 has no pyarrow): each cell table is read back by CellTable and
        // written as an .h5ad, whose obs anndata compares with the input's rows of that shard
        List<Object> arguments = new ArrayList<>(List.of(input));
        for (int shard = 0; shard < result.shards(); shard++) {
            Path parquet = shards.resolve(String.format("shard_%06d.parquet", shard));
            Map<String, FrameColumn> table = new java.util.LinkedHashMap<>(CellTable.read(parquet));
            String[] cells = ((FrameColumn.Strings) table.remove(CellTable.CELL_ID)).values();
            Path copy = dir.resolve("table-" + source + "-" + shard + ".h5ad");
            try (H5adWriter writer = H5adWriter.create(copy, new String[]{"gene"})) {
                writer.appendSparse(cells.length, new int[cells.length + 1], new int[0], new float[0]);
                writer.cellNames(cells);
                table.forEach(writer::obs);
                writer.commit();
            }
            arguments.add(shard * 13);
            arguments.add(copy);
        }
        assertEquals("ok", PythonPeer.run("""
                import sys, pandas as pd, anndata
                inp = anndata.read_h5ad(sys.argv[1])
                rows = 0
                for first, path in zip(sys.argv[2::2], sys.argv[3::2]):
                    table = anndata.read_h5ad(path).obs
                    part = inp.obs.iloc[int(first):int(first) + len(table)]
                    pd.testing.assert_index_equal(part.index, table.index, exact=True)
                    assert list(table.columns) == list(inp.obs.columns), list(table.columns)
                    for c in inp.obs.columns:
                        pd.testing.assert_series_equal(part[c], table[c], check_exact=True, obj="shard obs column " + c)
                    rows += len(table)
                assert rows == inp.n_obs, rows
                print("ok")
                """, arguments.toArray()));
    }

    @Test
    void cellTableColumnsHaveTheirOwnParquetTypes() throws Exception {
        Path shards = dir.resolve("shards");
        ShardWriter.builder().setInput(input("typed")).optShardSize(100).optProgress(ProgressListener.silent()).write(shards);
        MessageType schema = blue.strategic.parquet.ParquetReader.readMetadata(shards.resolve("shard_000000.parquet").toFile())
                .getFileMetaData().getSchema();
        assertParquet(schema, "int8", PrimitiveType.PrimitiveTypeName.INT32, LogicalTypeAnnotation.intType(8, true), true);
        assertParquet(schema, "uint16", PrimitiveType.PrimitiveTypeName.INT32, LogicalTypeAnnotation.intType(16, false), true);
        assertParquet(schema, "uint32", PrimitiveType.PrimitiveTypeName.INT32, LogicalTypeAnnotation.intType(32, false), true);
        assertParquet(schema, "int64", PrimitiveType.PrimitiveTypeName.INT64, LogicalTypeAnnotation.intType(64, true), true);
        assertParquet(schema, "uint64", PrimitiveType.PrimitiveTypeName.INT64, LogicalTypeAnnotation.intType(64, false), true);
        assertParquet(schema, "float32", PrimitiveType.PrimitiveTypeName.FLOAT, null, true);
        assertParquet(schema, "float64", PrimitiveType.PrimitiveTypeName.DOUBLE, null, true);
        assertParquet(schema, "bool", PrimitiveType.PrimitiveTypeName.BOOLEAN, null, true);
        assertParquet(schema, "str_unique", PrimitiveType.PrimitiveTypeName.BINARY, LogicalTypeAnnotation.stringType(), true);
        assertParquet(schema, "cat_missing", PrimitiveType.PrimitiveTypeName.BINARY, LogicalTypeAnnotation.stringType(), false);
        assertParquet(schema, "cat_int", PrimitiveType.PrimitiveTypeName.INT64, LogicalTypeAnnotation.intType(64, true), false);
        assertParquet(schema, "nullable_uint16", PrimitiveType.PrimitiveTypeName.INT32, LogicalTypeAnnotation.intType(16, false), false);
        assertParquet(schema, "nullable_bool", PrimitiveType.PrimitiveTypeName.BOOLEAN, null, false);
        // the folder is a valid shard set with the typed tables
        dev.memfit.shard.ShardStore.validate(shards);
    }

    private static void assertParquet(MessageType schema, String name, PrimitiveType.PrimitiveTypeName physical,
                                      LogicalTypeAnnotation logical, boolean required) {
        PrimitiveType field = schema.getType(name).asPrimitiveType();
        assertEquals(physical, field.getPrimitiveTypeName(), name);
        assertEquals(logical, field.getLogicalTypeAnnotation(), name);
        assertEquals(required ? Type.Repetition.REQUIRED : Type.Repetition.OPTIONAL, field.getRepetition(), name);
    }

    @Test
    void anndata07CategoricalsAreReadThroughTheirObjectReference() {
        Path archive = input("v0.7.0");
        try (H5ad h5ad = H5ad.open(archive)) {
            Map<String, FrameColumn> obs = h5ad.frameColumns("obs");
            FrameColumn.Categorical cat = assertInstanceOf(FrameColumn.Categorical.class, obs.get("obs_cat"));
            assertEquals(DType.INT8, cat.codes().dtype());
            assertFalse(cat.ordered());
            assertTrue(assertInstanceOf(FrameColumn.Categorical.class, obs.get("cat_ordered")).ordered());
            assertEquals(DType.UINT8, ((FrameColumn.Numbers) obs.get("uint8")).dtype());
            assertEquals(DType.INT64, ((FrameColumn.Numbers) obs.get("int64")).dtype());
            assertEquals("S", cat.labels()[0], "the first cell's category, as anndata reads it");
        }
        // the reference, not the name: categories moved away from __categories/<name> are still found, and a
        // reference to a group is refused by name
        Path moved = dir.resolve("moved.h5ad");
        PythonPeer.run("""
                import sys, shutil, h5py
                shutil.copy(sys.argv[1], sys.argv[2])
                with h5py.File(sys.argv[2], "r+") as f:
                    f.move("obs/__categories/obs_cat", "uns/elsewhere")
                    f["obs/cat_ordered"].attrs["categories"] = f["obsm"].ref
                print("ok")
                """, archive, moved);
        try (H5ad h5ad = H5ad.open(moved)) {
            FrameColumn.Categorical cat = (FrameColumn.Categorical) h5ad.frameColumn("obs", "obs_cat");
            assertEquals("S", cat.labels()[0]);
            assertEquals(22, cat.categories().size());
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> h5ad.frameColumn("obs", "cat_ordered"));
            assertTrue(e.getMessage().contains("moved.h5ad") && e.getMessage().contains("/obs/cat_ordered")
                    && e.getMessage().contains("a group"), e.getMessage());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"matrix", "record", "half"})
    void aColumnMemfitCannotCarryIsRefusedByNameBeforeAnythingIsWritten(String column) {
        Path input = dir.resolve("odd-" + column + ".h5ad");
        PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata, h5py
                n = 20
                rng = np.random.default_rng(1)
                obs = pd.DataFrame({"kept": np.arange(n)}, index=[f"c{i}" for i in range(n)])
                if sys.argv[2] == "half":
                    obs["half"] = np.arange(n, dtype=np.float16)   # anndata writes float16 as such
                anndata.AnnData(sp.csr_matrix(rng.poisson(2.0, (n, 12)).astype(np.float32)), obs=obs).write_h5ad(sys.argv[1])
                with h5py.File(sys.argv[1], "r+") as f:
                    if sys.argv[2] == "matrix":
                        f["obs"].create_dataset("matrix", data=np.zeros((n, 2)))
                    if sys.argv[2] == "record":
                        f["obs"].create_dataset("record", data=np.zeros(n, dtype=[("a", "i4"), ("b", "f8")]))
                    if sys.argv[2] != "half":
                        f["obs"].attrs["column-order"] = np.array(["kept", sys.argv[2]], dtype=object)
                print("ok")
                """, input, column);
        String found = switch (column) {
            case "matrix" -> "a dataset of shape [20, 2]";
            case "record" -> "a dataset of compound";
            default -> "a dataset of float16";
        };
        Path output = dir.resolve("out-" + column + ".h5ad");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Preprocess.builder().setInput(input)
                .optHighlyVariable(5).optProgress(ProgressListener.silent()).run(output));
        assertTrue(e.getMessage().contains(input.toString()) && e.getMessage().contains("/obs/" + column)
                && e.getMessage().contains(found), e.getMessage());
        assertFalse(Files.exists(output));
        Path shards = dir.resolve("shards-" + column);
        InvalidFileException s = assertThrows(InvalidFileException.class, () -> ShardWriter.builder().setInput(input)
                .optProgress(ProgressListener.silent()).write(shards));
        assertTrue(s.getMessage().contains("/obs/" + column) && s.getMessage().contains(found), s.getMessage());
        assertFalse(Files.exists(shards.resolve("shard_000000.parquet")));
    }

    @Test
    void statisticsColumnsThatWouldReplaceAnInputColumnAreRefused() {
        Path input = dir.resolve("hvg-before.h5ad");
        PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata
                a = anndata.AnnData(sp.csr_matrix(np.random.default_rng(2).poisson(2.0, (20, 12)).astype(np.float32)))
                a.var["means"] = np.arange(12.0)
                a.write_h5ad(sys.argv[1])
                print("ok")
                """, input);
        Path output = dir.resolve("out.h5ad");
        dev.memfit.MemfitException e = assertThrows(dev.memfit.MemfitException.class, () -> Preprocess.builder()
                .setInput(input).optHighlyVariable(5).optProgress(ProgressListener.silent()).run(output));
        assertTrue(e.getMessage().contains("[means]"), e.getMessage());
        assertFalse(Files.exists(output));
    }

    @Test
    void namedIndexesKeepTheirNames() {
        Path input = dir.resolve("named.h5ad");
        PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata
                a = anndata.AnnData(sp.csr_matrix(np.random.default_rng(3).poisson(2.0, (25, 15)).astype(np.float32)))
                a.obs_names = [f"bc{i}" for i in range(25)]
                a.obs.index.name = "barcode"
                a.var.index.name = "gene_ids"
                a.var["gene_short_name"] = [f"g{i}" for i in range(15)]
                a.write_h5ad(sys.argv[1])
                print("ok")
                """, input);
        Path output = dir.resolve("named-out.h5ad");
        Preprocess.builder().setInput(input).optHighlyVariable(5).optProgress(ProgressListener.silent()).run(output);
        assertEquals("barcode gene_ids", PythonPeer.run("""
                import sys, anndata
                out = anndata.read_h5ad(sys.argv[1])
                print(out.obs.index.name, out.var.index.name)
                """, output));
        PythonPeer.run(COMPARE, input, output);
    }

    @Test
    void subsetKeepsTypeAndCategories() {
        FrameColumn.Categorical cat = new FrameColumn.Categorical(new FrameColumn.Numbers(DType.INT16, new short[]{2, -1, 0}),
                new FrameColumn.Strings(new String[]{"c", "a", "b"}), true);
        FrameColumn.Categorical picked = cat.subset(new int[]{2, 0});
        assertEquals(DType.INT16, picked.codes().dtype());
        assertArrayEquals(new String[]{"c", "b"}, picked.labels());
        assertEquals(cat.categories(), picked.categories());
        FrameColumn.Numbers big = new FrameColumn.Numbers(DType.UINT64, new long[]{-1L, 5});
        assertEquals("18446744073709551615", big.textAt(0));
        assertEquals(1.8446744073709552E19, big.doubleAt(0));
        assertEquals("uint64", big.range(1, 1).typeName());
    }
}
