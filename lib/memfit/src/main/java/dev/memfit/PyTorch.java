package dev.memfit;

import ai.djl.engine.Engine;
import ai.djl.pytorch.jni.JniUtils;

/**
 * DJL's PyTorch engine as memfit's trainers and embedders use it: CPU results reproducible from a seed.
 */
public final class PyTorch {

    private static volatile boolean threadsFixed;

    private PyTorch() {
    }

    /**
     * The PyTorch engine, its CPU thread count fixed on first use.
     *
     * <p>PyTorch leaves MKL free to choose fewer threads per call ("dynamic" mode) unless the thread count is set,
     * and a matrix product split over another number of threads rounds differently. Measured on 2 cores: about one CPU
     * fit in 500 drifted from the same seed's other runs after a few Adam steps; none in 4,000 with MKL on one
     * thread. Setting the count it already has turns dynamic mode off ({@code at::set_num_threads} calls
     * {@code mkl_set_dynamic(false)}), so the same seed and batches give the same losses, and a resumed fit the
     * uninterrupted one's. A count set through {@code -Dai.djl.pytorch.num_threads} is kept.
     *
     * @return the engine
     */
    public static Engine engine() {
        Engine pytorch = Engine.getEngine("PyTorch");
        if (!threadsFixed) {
            synchronized (PyTorch.class) {
                if (!threadsFixed) {
                    JniUtils.setNumThreads(JniUtils.getNumThreads());
                    threadsFixed = true;
                }
            }
        }
        return pytorch;
    }
}
