package dev.memfit.io.zarr;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The user attributes of a zarr group or array ({@code .zattrs}, a JSON object), read by name with typed getters;
 * what anndata keeps there: {@code encoding-type}, {@code encoding-version}, {@code shape}, {@code _index},
 * {@code column-order}, {@code ordered}. Immutable.
 */
public final class ZarrAttributes {

    private static final ZarrAttributes EMPTY = new ZarrAttributes(JsonNodeFactory.instance.objectNode());

    private final ObjectNode json;

    ZarrAttributes(ObjectNode json) {
        this.json = json;
    }

    static ZarrAttributes empty() {
        return EMPTY;
    }

    /**
     * The attribute names, sorted.
     *
     * @return the names
     */
    public Set<String> names() {
        Set<String> names = new TreeSet<>();
        json.fieldNames().forEachRemaining(names::add);
        return names;
    }

    /**
     * Whether an attribute is set (to anything, null included).
     *
     * @param name the attribute
     * @return true when present
     */
    public boolean has(String name) {
        return json.has(name);
    }

    /**
     * A text attribute, such as anndata's {@code encoding-type} or a dataframe's {@code _index}.
     *
     * @param name the attribute
     * @return its text, or empty when absent or not text
     */
    public Optional<String> string(String name) {
        JsonNode node = json.get(name);
        return node != null && node.isTextual() ? Optional.of(node.asText()) : Optional.empty();
    }

    /**
     * The encoding anndata wrote a group or array with ({@code encoding-type}: {@code anndata}, {@code csr_matrix},
     * {@code csc_matrix}, {@code dataframe}, {@code categorical}, {@code array}, {@code string-array}...).
     *
     * @return the encoding type, or empty for files written before anndata 0.8 marked them
     */
    public Optional<String> encodingType() {
        return string("encoding-type");
    }

    /**
     * A list of texts, such as a dataframe's {@code column-order}; a single text counts as a list of one.
     *
     * @param name the attribute
     * @return the texts, empty when absent
     * @throws dev.memfit.MemfitException when the attribute holds something else than texts
     */
    public List<String> strings(String name) {
        JsonNode node = json.get(name);
        List<String> out = new ArrayList<>();
        if (node == null || node.isNull()) {
            return out;
        }
        if (node.isTextual()) {
            out.add(node.asText());
            return out;
        }
        if (!node.isArray()) {
            throw new dev.memfit.MemfitException("attribute " + name + ": expected a list of texts, found " + node);
        }
        for (JsonNode item : node) {
            if (!item.isTextual()) {
                throw new dev.memfit.MemfitException("attribute " + name + ": expected a list of texts, found " + node);
            }
            out.add(item.asText());
        }
        return out;
    }

    /**
     * A list of whole numbers, such as a sparse matrix's {@code shape}; a single number counts as a list of one.
     *
     * @param name the attribute
     * @return the numbers, or empty when absent
     * @throws dev.memfit.MemfitException when the attribute holds something else than whole numbers
     */
    public Optional<long[]> longs(String name) {
        JsonNode node = json.get(name);
        if (node == null || node.isNull()) {
            return Optional.empty();
        }
        if (node.canConvertToExactIntegral() && node.canConvertToLong()) {
            return Optional.of(new long[] {node.asLong()});
        }
        if (!node.isArray()) {
            throw new dev.memfit.MemfitException("attribute " + name + ": expected whole numbers, found " + node);
        }
        long[] out = new long[node.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode item = node.get(i);
            if (!item.canConvertToExactIntegral() || !item.canConvertToLong()) {
                throw new dev.memfit.MemfitException("attribute " + name + ": expected whole numbers, found " + node);
            }
            out[i] = item.asLong();
        }
        return Optional.of(out);
    }

    /**
     * A number attribute.
     *
     * @param name the attribute
     * @return its value, or empty when absent or not a number
     */
    public Optional<Double> number(String name) {
        JsonNode node = json.get(name);
        return node != null && node.isNumber() ? Optional.of(node.asDouble()) : Optional.empty();
    }

    /**
     * A true/false attribute, such as a categorical's {@code ordered}.
     *
     * @param name the attribute
     * @return its value, or empty when absent or not a boolean
     */
    public Optional<Boolean> bool(String name) {
        JsonNode node = json.get(name);
        return node != null && node.isBoolean() ? Optional.of(node.asBoolean()) : Optional.empty();
    }

    /**
     * The attributes as JSON text, for {@code inspect} and for attributes without a typed getter.
     *
     * @return compact JSON
     */
    public String json() {
        return json.toString();
    }

    @Override
    public String toString() {
        return json();
    }
}
