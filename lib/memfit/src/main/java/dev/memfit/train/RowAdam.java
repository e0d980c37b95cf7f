package dev.memfit.train;

import ai.djl.ndarray.NDArray;
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
     * @param current the current values of those rows
     * @param gradient the gradient of those rows
     * @param scratch the manager that owns this step's temporaries
     */
    void update(NDArray parameter, NDIndex rows, NDArray current, NDArray gradient, NDManager scratch) {
        steps++;
        NDArray m = firstMoment.get(rows);
        NDArray v = secondMoment.get(rows);
        m.attach(scratch);
        v.attach(scratch);
        NDArray newM = m.mul(BETA1).add(gradient.mul(1 - BETA1));
        NDArray newV = v.mul(BETA2).add(gradient.square().mul(1 - BETA2));
        float mCorrection = (float) (1 - Math.pow(BETA1, steps));
        float vCorrection = (float) (1 - Math.pow(BETA2, steps));
        NDArray step = newM.div(mCorrection).div(newV.div(vCorrection).sqrt().add(EPSILON)).mul(learningRate);
        firstMoment.set(rows, newM);
        secondMoment.set(rows, newV);
        parameter.set(rows, current.sub(step));
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
