package dev.memfit.train;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.initializer.Initializer;

/**
 * Random values drawn by the CPU's generator and copied to the device, so that one seed gives the same initial
 * parameters and the same noise on a GPU as on the CPU (PyTorch's CUDA generator, seeded alike, draws another
 * stream). On the CPU nothing changes: the values are drawn where they are used, as before.
 *
 * @param inner the initializer whose values are drawn
 */
record HostDrawn(Initializer inner) implements Initializer {

    @Override
    public NDArray initialize(NDManager manager, Shape shape, DataType dataType) {
        if (!manager.getDevice().isGpu()) {
            return inner.initialize(manager, shape, dataType);
        }
        try (NDManager host = manager.getEngine().newBaseManager(Device.cpu())) {
            return onDevice(inner.initialize(host, shape, dataType), manager);
        }
    }

    /**
     * Standard normal noise of a shape, in a scope, drawn on the CPU when the scope is on a GPU.
     *
     * @param scope the manager the noise belongs to
     * @param shape its shape
     * @return the noise, on the scope's device
     */
    static NDArray normal(NDManager scope, Shape shape) {
        if (!scope.getDevice().isGpu()) {
            return scope.randomNormal(shape);
        }
        try (NDManager host = scope.getEngine().newBaseManager(Device.cpu())) {
            return onDevice(host.randomNormal(shape), scope);
        }
    }

    private static NDArray onDevice(NDArray drawn, NDManager target) {
        NDArray moved = drawn.toDevice(target.getDevice(), true);
        moved.attach(target);
        return moved;
    }
}
