package dev.memfit.train;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Adam over whole parameters, with its moments in the open so that a checkpoint can save and restore them.
 *
 * <p>The step is DJL's own ({@code NDArrayEx.adamUpdate} with the bias corrections folded into the learning rate,
 * as {@code ai.djl.training.optimizer.Adam} calls it, which on PyTorch is torch's Adam kernel), so a model trains
 * exactly as it did with DJL's optimizer ({@code DenseAdamTest} checks bit equality). Like DJL, it adds epsilon to
 * the uncorrected root of the second moment, where {@code torch.optim.Adam} adds it after the bias correction: the
 * two differ only for gradients near epsilon (the test bounds the gap against a torch trace). Written here because DJL's {@code Adam} keeps its moments and step counts private: a
 * resumed fit would restart them from zero and take different steps.
 */
final class DenseAdam {

    private static final float BETA1 = 0.9f;
    private static final float BETA2 = 0.999f;
    private static final float EPSILON = 1e-8f;

    private final float learningRate;
    private final Map<String, NDArray> firstMoments = new LinkedHashMap<>();
    private final Map<String, NDArray> secondMoments = new LinkedHashMap<>();
    private long steps;

    /**
     * Creates the moments of every parameter (zeros, on the parameter's device and manager).
     *
     * @param learningRate the fixed learning rate
     * @param parameters the parameters by stable name, all stepped together
     */
    DenseAdam(float learningRate, Map<String, NDArray> parameters) {
        this.learningRate = learningRate;
        parameters.forEach((name, weight) -> {
            firstMoments.put(name, weight.zerosLike());
            secondMoments.put(name, weight.zerosLike());
        });
    }

    /** Starts the next step: every parameter's update in it uses the same bias correction. */
    void beginStep() {
        steps++;
    }

    /**
     * Updates one parameter in place (after {@link #beginStep()}).
     *
     * @param name the parameter's name, as given to the constructor
     * @param weight the parameter
     * @param gradient its gradient
     */
    void update(String name, NDArray weight, NDArray gradient) {
        NDArray mean = firstMoments.get(name);
        if (mean == null || steps == 0) {
            throw new IllegalStateException(mean == null ? "no moments for parameter " + name : "beginStep() first");
        }
        double correction1 = 1.0 - Math.pow(BETA1, steps);
        double correction2 = 1.0 - Math.pow(BETA2, steps);
        float corrected = (float) (learningRate * Math.sqrt(correction2) / correction1);
        // the arguments DJL's Adam passes: no weight decay, gradients unscaled and unclipped, lazy, not AdamW
        weight.getNDArrayInternal().adamUpdate(new NDList(weight, gradient, mean, secondMoments.get(name)),
                new NDList(weight), learningRate, corrected, 0f, 1f, -1f, BETA1, BETA2, EPSILON, true, false);
    }

    /**
     * The optimizer's arrays for a checkpoint: {@code <name>/m} and {@code <name>/v} per parameter.
     *
     * @param prefix put before every name
     * @param into where to add them, in a stable order
     */
    void state(String prefix, Map<String, NDArray> into) {
        firstMoments.forEach((name, m) -> {
            into.put(prefix + name + "/m", m);
            into.put(prefix + name + "/v", secondMoments.get(name));
        });
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

    /** Frees the moments (the optimizer of one fit; the parameters live on). */
    void close() {
        firstMoments.values().forEach(NDArray::close);
        secondMoments.values().forEach(NDArray::close);
    }
}
