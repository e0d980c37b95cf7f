package dev.memfit.train;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;

import java.util.Map;

/**
 * Adam applied to selected rows of a large parameter, with per-row first and second moments and a global step
 * count for bias correction, as torch's {@code SparseAdam} does: rows not in a step keep their moments and values.
 * One difference, kept on purpose and pinned by {@code RowAdamTest}: epsilon is added to the bias-corrected root
 * (Kingma and Ba's form), while torch adds it before the correction, which makes torch's effective epsilon up to
 * {@code 1/sqrt(1 - beta2^t)} times larger; the two differ only for gradients near epsilon.
 *
 * <p>Written here because DJL's optimizers update whole parameters; for per-document parameters that grow with the
 * data, a dense update would make each step cost as much as the whole table.
 */
final class RowAdam {

    private static final float BETA1 = 0.9f;
    private static final float BETA2 = 0.999f;
    private static final float EPSILON = 1e-8f;

    private final NDArray firstMoment;
    private final NDArray secondMoment;
    private final float learningRate;
    private long steps;

    RowAdam(NDManager manager, Shape shape, float learningRate) {
        this.firstMoment = manager.zeros(shape);
        this.secondMoment = manager.zeros(shape);
        this.learningRate = learningRate;
    }

    /**
     * Updates the given rows of a parameter in place.
     *
     * @param parameter the whole parameter
     * @param rows the rows to update (no duplicates)
     * @param current the current values of those rows, a copy without gradient that this overwrites
     * @param gradient the gradient of those rows
     * @param scratch the manager that owns this step's temporaries
     */
    void update(NDArray parameter, NDIndex rows, NDArray current, NDArray gradient, NDManager scratch) {
        steps++;
        NDArray m = firstMoment.get(rows);
        NDArray v = secondMoment.get(rows);
        m.attach(scratch);
        v.attach(scratch);
        // One native call (DJL's fused Adam: m, v and the rows updated in place) instead of a dozen small ops, each a
        // JNI call and, on a GPU, a kernel launch. It adds epsilon to the uncorrected root and folds the corrections
        // into the rate, so both go in scaled: lr sqrt(c2) / c1 * m / (sqrt(v) + eps sqrt(c2)) is exactly
        // lr (m / c1) / (sqrt(v / c2) + eps), epsilon still added to the bias-corrected root (up to float rounding).
        double root = Math.sqrt(1 - Math.pow(BETA2, steps));
        float rate = (float) (learningRate * root / (1 - Math.pow(BETA1, steps)));
        float epsilon = (float) (EPSILON * root);
        current.getNDArrayInternal().adamUpdate(new NDList(current, gradient, m, v), new NDList(current), learningRate,
                rate, 0f, 1f, -1f, BETA1, BETA2, epsilon, true, false);
        firstMoment.set(rows, m);
        secondMoment.set(rows, v);
        parameter.set(rows, current);
    }

    /**
     * The moments for a checkpoint: {@code <prefix>m} and {@code <prefix>v}.
     *
     * @param prefix put before every name
     * @param into where to add them
     */
    void state(String prefix, Map<String, NDArray> into) {
        into.put(prefix + "m", firstMoment);
        into.put(prefix + "v", secondMoment);
    }

    /**
     * The steps taken, for the bias correction.
     *
     * @return steps
     */
    long steps() {
        return steps;
    }

    /**
     * Continues from a checkpoint's step count (the moments are restored in place through {@link #state}).
     *
     * @param count steps taken before
     */
    void restoreSteps(long count) {
        this.steps = count;
    }
}
