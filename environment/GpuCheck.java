import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.pytorch.jni.LibUtils;
import ai.djl.util.cuda.CudaUtils;

/**
 * The last step of {@code ./memfit gpu-setup}: loads DJL's PyTorch engine with the settings it recorded, and checks
 * that the engine uses that torch, sees the GPU and computes on it what the CPU computes. Exit status 0 when it does.
 * Run with memfit's class path as a source file (java -cp ... environment/GpuCheck.java).
 */
public final class GpuCheck {

    private GpuCheck() {
    }

    public static void main(String[] args) {
        Engine engine = Engine.getEngine("PyTorch");
        String flavor = System.getenv().getOrDefault("PYTORCH_FLAVOR", "");
        System.out.printf("gpu-check: DJL %s, PyTorch %s from %s, flavor %s%n", Engine.getDjlVersion(), engine.getVersion(),
                LibUtils.getLibtorchPath(), flavor.isEmpty() ? "(DJL's default)" : flavor);
        int gpus = engine.getGpuCount();
        System.out.printf("gpu-check: %d GPU(s) visible, default device %s%n", gpus, engine.defaultDevice());
        if (gpus == 0) {
            if (flavor.startsWith("cu")) {
                System.err.println("gpu-check: FAILED: the engine loaded but sees no GPU. Is libcudart.so on LD_LIBRARY_PATH "
                        + "(build/gpu/env.sh), and does nvidia-smi list the GPU?");
                System.exit(1);
            }
            System.out.println("gpu-check: ok (CPU only: no GPU to check)");
            return;
        }
        Device gpu = Device.gpu(0);
        try (NDManager cpuManager = NDManager.newBaseManager(Device.cpu()); NDManager gpuManager = NDManager.newBaseManager(gpu)) {
            NDArray a = cpuManager.randomUniform(-1, 1, new ai.djl.ndarray.types.Shape(256, 128));
            NDArray b = cpuManager.randomUniform(-1, 1, new ai.djl.ndarray.types.Shape(128, 64));
            NDArray onCpu = a.matMul(b);
            NDArray onGpu = a.toDevice(gpu, true).matMul(b.toDevice(gpu, true)).toDevice(Device.cpu(), false);
            float difference = onCpu.sub(onGpu).abs().max().getFloat();
            var memory = CudaUtils.getGpuMemory(gpu);
            System.out.printf("gpu-check: matmul on %s, max |gpu - cpu| %.2e; device memory %d MiB used of %d MiB%n", gpu,
                    difference, memory.getUsed() >> 20, memory.getMax() >> 20);
            if (!(difference < 1e-3f)) {
                System.err.println("gpu-check: FAILED: the GPU's matmul differs from the CPU's by " + difference);
                System.exit(1);
            }
        }
        System.out.println("gpu-check: ok");
    }
}
