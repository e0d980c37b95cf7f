package dev.memfit.train;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;

import java.util.LinkedHashMap;
import java.util.Map;

/** What memfit's block-based trainers do to every parameter: name it, track its gradient, and step it. */
final class BlockTraining {

    private BlockTraining() {
    }

    /** Marks every parameter of initialised blocks as requiring a gradient. */
    static void requireGradients(Block... blocks) {
        for (Block block : blocks) {
            for (Pair<String, Parameter> parameter : block.getParameters()) {
                parameter.getValue().getArray().setRequiresGradient(true);
            }
        }
    }

    /**
     * The parameters of an initialised block by stable names ({@code prefix} + DJL's path in the block, such as
     * {@code encoder/01Linear_weight}), the same every time the block is built the same way, for checkpoints.
     *
     * @param prefix put before every name
     * @param block the block
     * @param into where to add them, in the block's order
     * @return {@code into}
     */
    static Map<String, NDArray> parameters(String prefix, Block block, Map<String, NDArray> into) {
        for (Pair<String, Parameter> parameter : block.getParameters()) {
            into.put(prefix + parameter.getKey(), parameter.getValue().getArray());
        }
        return into;
    }

    /**
     * The parameters of initialised blocks, each under its prefix.
     *
     * @param named prefix, block, prefix, block...
     * @return the parameters by name
     */
    static Map<String, NDArray> parameters(Object... named) {
        Map<String, NDArray> all = new LinkedHashMap<>();
        for (int i = 0; i < named.length; i += 2) {
            parameters((String) named[i], (Block) named[i + 1], all);
        }
        return all;
    }

    /**
     * {@code x * constant} where the backward pass goes through the product. Not DJL's {@code x.mul(constant)}: that
     * makes the constant an array over Java memory, multiplies and closes it at once, while the autograd graph keeps
     * the constant's memory for the backward pass; a garbage collection in between frees it, and the gradient is then
     * scaled by whatever lies there (measured: a gradient of -6e-33 for 0.125 in {@code BlockTrainingTest}; fits of the
     * gene transformer from one seed drifting apart in 1 run in 20 to 40, none without collections). Here the constant
     * is cloned into the engine's own memory ({@code toDevice} to the same device aliases the Java buffer instead) and
     * kept in {@code scope} (closed after the backward pass), on the device of {@code x}.
     *
     * @param x the array
     * @param constant the factor
     * @param scope the batch's scope
     * @return the product
     */
    static NDArray times(NDArray x, float constant, NDManager scope) {
        NDArray engineOwned;
        // duplicate() is the engine's clone, into its own memory; toDevice(same device, copy) returned an alias of the
        // Java buffer (a forced collection after the product changed the next step's loss: measured)
        try (NDArray fromJava = scope.create(constant)) {
            engineOwned = fromJava.duplicate();
        }
        if (!engineOwned.getDevice().equals(x.getDevice())) {
            NDArray moved = engineOwned.toDevice(x.getDevice(), false);
            engineOwned.close();
            engineOwned = moved;
        }
        engineOwned.attach(scope);
        return x.mul(engineOwned);
    }

    /**
     * One optimizer step on every parameter, its gradient multiplied by {@code scale} first (in place: the update
     * zeroes the parameter's gradient afterwards); the gradient views go to {@code scope}, closed by the caller.
     */
    static void step(DenseAdam optimizer, NDManager scope, float scale, Map<String, NDArray> parameters) {
        optimizer.beginStep();
        parameters.forEach((name, weight) -> {
            NDArray gradient = weight.getGradient();
            gradient.attach(scope);
            if (scale != 1f) {
                gradient.muli(scale);
            }
            optimizer.update(name, weight, gradient);
        });
    }

    /**
     * A block-based model's part of the loop that does not depend on the model: its parameters and their Adam, as a
     * checkpoint saves and restores them ({@code parameters/<name>}, {@code adam/<name>/m|v}, the step count).
     */
    abstract static class Model implements Fit.Model {
        private final Map<String, NDArray> parameters;
        private final DenseAdam adam;

        Model(Map<String, NDArray> parameters, DenseAdam adam) {
            this.parameters = parameters;
            this.adam = adam;
        }

        @Override
        public Map<String, NDArray> stateArrays() {
            Map<String, NDArray> arrays = new LinkedHashMap<>();
            parameters.forEach((name, array) -> arrays.put("parameters/" + name, array));
            adam.state("adam/", arrays);
            return arrays;
        }

        @Override
        public Map<String, Long> counters() {
            return Map.of("adam steps", adam.steps());
        }

        @Override
        public void restoreCounters(Map<String, Long> counters) {
            adam.restoreSteps(counters.getOrDefault("adam steps", 0L));
        }
    }
}
