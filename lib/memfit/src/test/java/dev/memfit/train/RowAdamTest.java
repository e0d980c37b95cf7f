package dev.memfit.train;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link RowAdam} over a fixed sequence of row updates, step by step, against torch's {@code SparseAdam} (golden
 * values from {@code environment/bench/sparse_adam_trace.py}) and against a double-precision loop written here.
 *
 * <p>RowAdam and torch differ in one place: torch adds epsilon to the uncorrected {@code sqrt(v)}, RowAdam to the
 * bias-corrected one, so torch's effective epsilon is {@code 1 / sqrt(1 - b2^t)} times larger (31.6 at step 1). At
 * ordinary gradients that is a few float ulps of the parameter; near epsilon it dominates (see
 * {@link #epsilonIsAddedToTheBiasCorrectedRoot}).
 */
class RowAdamTest {

    private static final float LR = 0.05f;
    private static final double BETA1 = 0.9;
    private static final double BETA2 = 0.999;
    private static final double EPSILON = 1e-8;

    /** The same inputs as sparse_adam_trace.py: keep the two in step. */
    private static final float[][] INITIAL = {{0.8f, -1.2f, 0.5f}, {-0.6f, 1.1f, -0.9f}, {1.3f, 0.7f, -1.4f},
            {-1.0f, -0.55f, 0.95f}, {0.65f, -0.75f, 1.25f}, {-0.85f, 1.05f, -0.5f}};
    /**
     * The rows of each step. Row 5 is never touched; row 4 is first touched at step 4, so its bias correction uses
     * the global step; row 2 gets an all-zero gradient at step 3 (its moments decay and it still moves); rows come
     * unsorted at steps 3 and 5.
     */
    private static final long[][] STEP_ROWS = {{0, 1, 2}, {1, 3}, {3, 0, 2}, {4}, {1, 4, 0}, {2}, {0, 1, 2, 3, 4}};
    /** The gradients of those rows, in the same order. */
    private static final float[][][] STEP_GRADIENTS = {
            {{0.3f, -0.2f, 0.05f}, {-0.7f, 0.4f, 0.1f}, {0.25f, 0.0f, -0.9f}},
            {{0.5f, -0.35f, 0.2f}, {-0.15f, 0.6f, 0.45f}},
            {{0.2f, 0.1f, -0.3f}, {-0.4f, 0.8f, 0.15f}, {0.0f, 0.0f, 0.0f}},
            {{1.5f, -0.05f, 0.3f}},
            {{-0.25f, 0.3f, -0.6f}, {0.9f, -1.1f, 0.2f}, {0.35f, -0.45f, 0.05f}},
            {{-0.5f, 0.65f, 0.7f}},
            {{0.1f, 0.2f, -0.1f}, {0.05f, -0.05f, 0.3f}, {-0.2f, 0.4f, 0.0f}, {0.6f, -0.3f, 0.25f},
                    {-0.8f, 0.15f, 0.1f}}};
    /** A gradient near epsilon: one step from 0 with it tells where epsilon is added. */
    private static final float TINY = 1e-9f;

    /** torch.optim.SparseAdam's parameter after each step (environment/bench/sparse_adam_trace.py). */
    private static final float[][][] TORCH_TRACE = {
            {{0.75000006f, -1.1500001f, 0.45000032f},
             {-0.5500001f, 1.0500001f, -0.9499998f},
             {1.25f, 0.7f, -1.35f},
             {-1.0f, -0.55f, 0.95f},
             {0.65f, -0.75f, 1.25f},
             {-0.85f, 1.05f, -0.5f}},
            {{0.75000006f, -1.1500001f, 0.45000032f},
             {-0.5443754f, 1.0492998f, -0.9982588f},
             {1.25f, 0.7f, -1.35f},
             {-0.96279323f, -0.58720684f, 0.91279316f},
             {0.65f, -0.75f, 1.25f},
             {-0.85f, 1.05f, -0.5f}},
            {{0.75830615f, -1.1740158f, 0.41060635f},
             {-0.5443754f, 1.0492998f, -0.9982588f},
             {1.2212391f, 0.7f, -1.321239f},
             {-0.9710993f, -0.6208297f, 0.90658987f},
             {0.65f, -0.75f, 1.25f},
             {-0.85f, 1.05f, -0.5f}},
            {{0.75830615f, -1.1740158f, 0.41060635f},
             {-0.5443754f, 1.0492998f, -0.9982588f},
             {1.2212391f, 0.7f, -1.321239f},
             {-0.9710993f, -0.6208297f, 0.90658987f},
             {0.62094355f, -0.72094375f, 1.2209436f},
             {-0.85f, 1.05f, -0.5f}},
            {{0.74788904f, -1.1771526f, 0.3734996f},
             {-0.5331931f, 1.035483f, -0.9838179f},
             {1.2212391f, 0.7f, -1.321239f},
             {-0.9710993f, -0.6208297f, 0.90658987f},
             {0.58584917f, -0.6925828f, 1.1853778f},
             {-0.85f, 1.05f, -0.5f}},
            {{0.74788904f, -1.1771526f, 0.3734996f},
             {-0.5331931f, 1.035483f, -0.9838179f},
             {1.235135f, 0.6738941f, -1.3205746f},
             {-0.9710993f, -0.6208297f, 0.90658987f},
             {0.58584917f, -0.6925828f, 1.1853778f},
             {-0.85f, 1.05f, -0.5f}},
            {{0.7351987f, -1.1849939f, 0.36002943f},
             {-0.52527326f, 1.0260419f, -0.9836352f},
             {1.2550944f, 0.64120597f, -1.3199944f},
             {-0.99675184f, -0.6311411f, 0.8919404f},
             {0.56971335f, -0.6725125f, 1.1499599f},
             {-0.85f, 1.05f, -0.5f}}
    };
    /** SparseAdam's parameter after one step from 0 with gradient TINY. */
    private static final float TORCH_TINY = -0.00015761546f;

    /**
     * After every step, every value matches the double loop to 1e-6 and torch's SparseAdam to 2e-6, and untouched
     * rows keep their values bit for bit (lazy: their moments do not decay and they do not move). torch's trace
     * matches the double loop with torch's epsilon to 1e-6: the wider tolerance against torch is the epsilon gap
     * (up to 1.2e-6 here, where a gradient of 0.05 meets torch's larger effective epsilon), not slack.
     */
    @Test
    void followsSparseAdamStepByStep() {
        double[][] reference = toDouble(INITIAL);
        double[][] m = new double[INITIAL.length][INITIAL[0].length];
        double[][] v = new double[INITIAL.length][INITIAL[0].length];
        double[][] torchReference = toDouble(INITIAL);
        double[][] torchM = new double[INITIAL.length][INITIAL[0].length];
        double[][] torchV = new double[INITIAL.length][INITIAL[0].length];
        try (NDManager manager = Engine.getEngine("PyTorch").newBaseManager(Device.cpu())) {
            NDArray parameter = manager.create(flatten(INITIAL), shape(INITIAL));
            RowAdam adam = new RowAdam(manager, parameter.getShape(), LR);
            float[][] before = INITIAL;
            for (int step = 0; step < STEP_ROWS.length; step++) {
                float[][] after = update(manager, adam, parameter, STEP_ROWS[step], STEP_GRADIENTS[step]);
                referenceStep(reference, m, v, step + 1, STEP_ROWS[step], STEP_GRADIENTS[step], false);
                referenceStep(torchReference, torchM, torchV, step + 1, STEP_ROWS[step], STEP_GRADIENTS[step], true);
                for (int row = 0; row < INITIAL.length; row++) {
                    boolean touched = contains(STEP_ROWS[step], row);
                    for (int col = 0; col < INITIAL[0].length; col++) {
                        String where = "step " + (step + 1) + " [" + row + "][" + col + "]";
                        float actual = after[row][col];
                        if (!touched) {
                            assertEquals(before[row][col], actual, 0f, where + " untouched");
                        }
                        assertEquals(TORCH_TRACE[step][row][col], actual, 2e-6 * Math.abs(actual), where + " torch");
                        assertEquals(reference[row][col], actual, 1e-6 * Math.abs(reference[row][col]),
                                where + " double");
                        assertEquals(torchReference[row][col], TORCH_TRACE[step][row][col],
                                1e-6 * Math.abs(torchReference[row][col]), where + " torch against its double loop");
                    }
                }
                before = after;
            }
        }
    }

    /**
     * One step from 0 with a gradient near epsilon: RowAdam moves by {@code lr * g / (|g| + eps)} = lr / 11 (epsilon
     * added to the bias-corrected root, as in the Adam paper's algorithm 1). torch's SparseAdam adds it to the
     * uncorrected root, {@code lr * sqrt(1 - b2) / (1 - b1) * m / (sqrt(v) + eps)}, and moves 29 times less
     * ({@link #TORCH_TINY}); the double loop in torch's form reproduces that.
     */
    @Test
    void epsilonIsAddedToTheBiasCorrectedRoot() {
        double[][] reference = {{0}};
        try (NDManager manager = Engine.getEngine("PyTorch").newBaseManager(Device.cpu())) {
            NDArray parameter = manager.zeros(new Shape(1, 1));
            RowAdam adam = new RowAdam(manager, parameter.getShape(), LR);
            float actual = update(manager, adam, parameter, new long[] {0}, new float[][] {{TINY}})[0][0];
            referenceStep(reference, new double[1][1], new double[1][1], 1, new long[] {0}, new float[][] {{TINY}},
                    false);
            assertEquals(-LR / 11.0, reference[0][0], 1e-3 * LR);
            assertEquals(reference[0][0], actual, 1e-6 * Math.abs(reference[0][0]));
            double[][] torchReference = {{0}};
            referenceStep(torchReference, new double[1][1], new double[1][1], 1, new long[] {0},
                    new float[][] {{TINY}}, true);
            assertEquals(torchReference[0][0], TORCH_TINY, 1e-6 * Math.abs(TORCH_TINY));
        }
    }

    /** One RowAdam step as TopicModel takes it: current rows gathered, temporaries in a scope closed afterwards. */
    private static float[][] update(NDManager manager, RowAdam adam, NDArray parameter, long[] rows,
                                    float[][] gradient) {
        try (NDManager scratch = manager.newSubManager()) {
            NDIndex index = new NDIndex("{}", scratch.create(rows));
            NDArray current = parameter.get(index);
            current.attach(scratch);
            adam.update(parameter, index, current, scratch.create(flatten(gradient), shape(gradient)), scratch);
        }
        float[] flat = parameter.toFloatArray();
        int cols = Math.toIntExact(parameter.getShape().get(1));
        float[][] result = new float[flat.length / cols][cols];
        for (int r = 0; r < result.length; r++) {
            System.arraycopy(flat, r * cols, result[r], 0, cols);
        }
        return result;
    }

    /**
     * Lazy Adam in doubles: only the given rows' moments and values change; bias correction uses the global step.
     * Epsilon goes on the bias-corrected root (RowAdam) or on the uncorrected one (torch's SparseAdam).
     */
    private static void referenceStep(double[][] parameter, double[][] m, double[][] v, int step, long[] rows,
                                      float[][] gradient, boolean torchEpsilon) {
        double c1 = 1 - Math.pow(BETA1, step);
        double c2 = 1 - Math.pow(BETA2, step);
        for (int i = 0; i < rows.length; i++) {
            int r = (int) rows[i];
            for (int c = 0; c < parameter[r].length; c++) {
                double g = gradient[i][c];
                m[r][c] = BETA1 * m[r][c] + (1 - BETA1) * g;
                v[r][c] = BETA2 * v[r][c] + (1 - BETA2) * g * g;
                parameter[r][c] -= torchEpsilon
                        ? LR * Math.sqrt(c2) / c1 * m[r][c] / (Math.sqrt(v[r][c]) + EPSILON)
                        : LR * (m[r][c] / c1) / (Math.sqrt(v[r][c] / c2) + EPSILON);
            }
        }
    }

    private static boolean contains(long[] rows, int row) {
        for (long r : rows) {
            if (r == row) {
                return true;
            }
        }
        return false;
    }

    private static float[] flatten(float[][] matrix) {
        float[] flat = new float[matrix.length * matrix[0].length];
        for (int r = 0; r < matrix.length; r++) {
            System.arraycopy(matrix[r], 0, flat, r * matrix[0].length, matrix[0].length);
        }
        return flat;
    }

    private static Shape shape(float[][] matrix) {
        return new Shape(matrix.length, matrix[0].length);
    }

    private static double[][] toDouble(float[][] matrix) {
        double[][] result = new double[matrix.length][matrix[0].length];
        for (int r = 0; r < matrix.length; r++) {
            for (int c = 0; c < matrix[0].length; c++) {
                result[r][c] = matrix[r][c];
            }
        }
        return result;
    }
}
