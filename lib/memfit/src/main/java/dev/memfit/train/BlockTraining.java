package dev.memfit.train;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.util.Pair;

/** The two things memfit's block-based trainers do to every parameter: track its gradient, and step it. */
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
     * One optimizer step on every parameter, its gradient multiplied by {@code scale} first (in place: DJL's update
     * zeroes the parameter's gradient afterwards); the gradient views go to {@code scope}, closed by the caller.
     */
    static void step(Optimizer optimizer, NDManager scope, float scale, Block... blocks) {
        for (Block block : blocks) {
            for (Pair<String, Parameter> parameter : block.getParameters()) {
                NDArray weight = parameter.getValue().getArray();
                NDArray gradient = weight.getGradient();
                gradient.attach(scope);
                if (scale != 1f) {
                    gradient.muli(scale);
                }
                optimizer.update(parameter.getValue().getId(), weight, gradient);
            }
        }
    }
}
