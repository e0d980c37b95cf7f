package dev.memfit.io.zarr;

import dev.memfit.InvalidFileException;
import dev.memfit.io.storage.Storage;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * A zarr store in one zip archive, as zarr-python's {@code ZipStore} writes it (entries stored) and as anndata's test
 * archive ships them (some entries deflated): the central directory is read once through the storage (ZIP64 records
 * included), then each key costs a read of its local header (once) and of its bytes. Works on any storage, so a
 * {@code .zarr.zip} in a bucket reads by ranges like a local one.
 */
final class ZipStore implements ZarrStore {

    private static final int EOCD = 0x06054b50;
    private static final int ZIP64_LOCATOR = 0x07064b50;
    private static final int ZIP64_EOCD = 0x06064b50;
    private static final int CENTRAL = 0x02014b50;
    private static final int LOCAL = 0x04034b50;
    private static final int STORED = 0;
    private static final int DEFLATED = 8;

    private final Storage storage;
    private final Path zip;
    private final boolean ownsStorage;
    private final Map<String, Integer> index = new HashMap<>();
    private final int[] methods;
    private final long[] compressedSizes;
    private final long[] sizes;
    private final long[] headerOffsets;
    /** Where each entry's bytes start, found from its local header on first use (-1 before). */
    private final AtomicLongArray dataOffsets;

    ZipStore(Storage storage, Path zip, boolean ownsStorage) {
        this.storage = storage;
        this.zip = zip;
        this.ownsStorage = ownsStorage;
        long length = storage.size(zip);
        int tail = (int) Math.min(length, 22 + 65535 + 20);
        byte[] end = read(length - tail, tail);
        int eocd = -1;
        for (int i = tail - 22; i >= 0; i--) {
            if (le32(end, i) == EOCD) {
                eocd = i;
                break;
            }
        }
        if (eocd < 0) {
            throw new InvalidFileException(zip, -1, "a zip archive (an end of central directory record)",
                    "none in the last " + tail + " bytes");
        }
        long entries = le16(end, eocd + 10);
        long directorySize = le32(end, eocd + 12) & 0xffffffffL;
        long directoryOffset = le32(end, eocd + 16) & 0xffffffffL;
        if (eocd >= 20 && le32(end, eocd - 20) == ZIP64_LOCATOR) {
            long zip64 = le64(end, eocd - 20 + 8);
            if (zip64 < 0 || zip64 > length - 56) {
                throw new InvalidFileException(zip, zip64, "a ZIP64 end of central directory record inside the " + length
                        + "-byte archive", "one at byte " + zip64);
            }
            byte[] record = read(zip64, 56);
            if (le32(record, 0) != ZIP64_EOCD) {
                throw new InvalidFileException(zip, zip64, "a ZIP64 end of central directory record", "other bytes");
            }
            entries = le64(record, 32);
            directorySize = le64(record, 40);
            directoryOffset = le64(record, 48);
        }
        if (directoryOffset < 0 || directorySize < 0 || directoryOffset > length || directorySize > length - directoryOffset
                || directorySize > Integer.MAX_VALUE - 8 || entries < 0 || entries > directorySize / 46) {
            throw new InvalidFileException(zip, directoryOffset, "a central directory inside the archive",
                    entries + " entries in " + directorySize + " bytes at byte " + directoryOffset + " of " + length);
        }
        int count = (int) entries;
        methods = new int[count];
        compressedSizes = new long[count];
        sizes = new long[count];
        headerOffsets = new long[count];
        dataOffsets = new AtomicLongArray(count);
        byte[] directory = read(directoryOffset, (int) directorySize);
        int at = 0;
        for (int i = 0; i < count; i++) {
            if (at + 46 > directory.length || le32(directory, at) != CENTRAL) {
                throw new InvalidFileException(zip, directoryOffset + at, "central directory entry " + i, "other bytes");
            }
            int method = le16(directory, at + 10);
            long compressed = le32(directory, at + 20) & 0xffffffffL;
            long size = le32(directory, at + 24) & 0xffffffffL;
            int nameLength = le16(directory, at + 28);
            int extraLength = le16(directory, at + 30);
            int commentLength = le16(directory, at + 32);
            long offset = le32(directory, at + 42) & 0xffffffffL;
            int name = at + 46;
            if (name + nameLength + extraLength + commentLength > directory.length) {
                throw new InvalidFileException(zip, directoryOffset + at, "central directory entry " + i + " inside the directory",
                        "an entry running past its end");
            }
            int extra = name + nameLength;
            for (int e = extra; e + 4 <= extra + extraLength; ) {
                int id = le16(directory, e);
                int dataSize = le16(directory, e + 2);
                if (id == 1) {
                    int field = e + 4;
                    if (size == 0xffffffffL && field + 8 <= e + 4 + dataSize) {
                        size = le64(directory, field);
                        field += 8;
                    }
                    if (compressed == 0xffffffffL && field + 8 <= e + 4 + dataSize) {
                        compressed = le64(directory, field);
                        field += 8;
                    }
                    if (offset == 0xffffffffL && field + 8 <= e + 4 + dataSize) {
                        offset = le64(directory, field);
                    }
                }
                e += 4 + dataSize;
            }
            String key = new String(directory, name, nameLength, StandardCharsets.UTF_8);
            methods[i] = method;
            compressedSizes[i] = compressed;
            sizes[i] = size;
            headerOffsets[i] = offset;
            dataOffsets.set(i, -1);
            index.put(key, i);
            at = extra + extraLength + commentLength;
        }
    }

    @Override
    public byte[] get(String key) {
        Integer entry = index.get(key);
        if (entry == null) {
            return null;
        }
        int i = entry;
        if (sizes[i] > Integer.MAX_VALUE - 8 || compressedSizes[i] > Integer.MAX_VALUE - 8) {
            throw new InvalidFileException(location(key), -1, "an entry of at most 2 GiB", sizes[i] + " bytes");
        }
        long length = storage.size(zip);
        long data = dataOffsets.get(i);
        if (data < 0) {
            if (headerOffsets[i] < 0 || headerOffsets[i] > length - 30) {
                throw new InvalidFileException(zip, headerOffsets[i], "the local header of entry " + key + " inside the "
                        + length + "-byte archive", "one at byte " + headerOffsets[i]);
            }
            byte[] header = read(headerOffsets[i], 30);
            if (le32(header, 0) != LOCAL) {
                throw new InvalidFileException(zip, headerOffsets[i], "the local header of entry " + key, "other bytes");
            }
            data = headerOffsets[i] + 30 + le16(header, 26) + le16(header, 28);
            dataOffsets.set(i, data);
        }
        // sizes from the central directory, checked before anything is allocated by them
        if (compressedSizes[i] < 0 || compressedSizes[i] > length - data) {
            throw new InvalidFileException(zip, data, "entry " + key + " (" + compressedSizes[i] + " bytes) inside the " + length
                    + "-byte archive", "an entry past its end");
        }
        if (methods[i] == DEFLATED && (sizes[i] < 0 || sizes[i] > compressedSizes[i] * Codec.DEFLATE_RATIO)) {
            throw new InvalidFileException(zip, data, "deflated entry " + key + " of at most " + compressedSizes[i] * Codec.DEFLATE_RATIO
                    + " bytes (" + compressedSizes[i] + " bytes stored, deflate's largest ratio " + Codec.DEFLATE_RATIO + ":1)",
                    sizes[i] + " bytes");
        }
        byte[] stored = read(data, (int) compressedSizes[i]);
        return switch (methods[i]) {
            case STORED -> stored;
            case DEFLATED -> inflate(key, stored, (int) sizes[i]);
            default -> throw new InvalidFileException(location(key), -1, "a zip entry stored or deflated",
                    "compression method " + methods[i]);
        };
    }

    private byte[] inflate(String key, byte[] in, int size) {
        Inflater inflater = new Inflater(true);
        try {
            inflater.setInput(in);
            byte[] out = new byte[size];
            int done = 0;
            while (done < size) {
                int n = inflater.inflate(out, done, size - done);
                if (n == 0 && (inflater.finished() || inflater.needsInput() || inflater.needsDictionary())) {
                    break;
                }
                done += n;
            }
            if (done != size) {
                throw new InvalidFileException(location(key), -1, size + " bytes deflated", done + " bytes");
            }
            return out;
        } catch (DataFormatException e) {
            throw new InvalidFileException(location(key), -1, "a deflated entry", e.getMessage(), e);
        } finally {
            inflater.end();
        }
    }

    @Override
    public boolean contains(String key) {
        return index.containsKey(key);
    }

    @Override
    public long size(String key) {
        Integer entry = index.get(key);
        return entry == null ? -1 : compressedSizes[entry];
    }

    @Override
    public long bytes() {
        return storage.size(zip);
    }

    @Override
    public List<String> list(String prefix) {
        String start = prefix.isEmpty() ? "" : prefix.endsWith("/") ? prefix : prefix + "/";
        TreeSet<String> names = new TreeSet<>();
        for (String key : index.keySet()) {
            if (key.startsWith(start) && key.length() > start.length()) {
                String rest = key.substring(start.length());
                int slash = rest.indexOf('/');
                String name = slash < 0 ? rest : rest.substring(0, slash);
                // an entry such as X//data or a/./b names no child: listing it would make a group its own child
                if (!name.isEmpty() && !name.equals(".") && !name.equals("..")) {
                    names.add(name);
                }
            }
        }
        return new ArrayList<>(names);
    }

    @Override
    public Path location(String key) {
        return Path.of(zip + "!/" + ZarrStore.printable(key));
    }

    private byte[] read(long position, int length) {
        byte[] bytes = new byte[length];
        storage.read(zip, position, MemorySegment.ofArray(bytes));
        return bytes;
    }

    private static int le16(byte[] b, int at) {
        return (b[at] & 0xff) | (b[at + 1] & 0xff) << 8;
    }

    private static int le32(byte[] b, int at) {
        return Blosc.le32(b, at);
    }

    private static long le64(byte[] b, int at) {
        return (le32(b, at) & 0xffffffffL) | (long) le32(b, at + 4) << 32;
    }

    @Override
    public void close() {
        if (ownsStorage) {
            storage.close();
        }
    }

    @Override
    public String toString() {
        return zip + " (zip, " + index.size() + " entries, " + storage.describe() + ")";
    }
}
