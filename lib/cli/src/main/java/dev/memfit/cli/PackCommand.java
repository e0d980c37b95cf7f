package dev.memfit.cli;

import dev.memfit.io.hdf5.Pack;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code memfit pack DIR -o data.h5}: many small sample files into one verified HDF5 file. */
@Command(name = "pack", mixinStandardHelpOptions = true,
        description = "Pack a folder of one-sample .npy files into one HDF5 file (/samples float32, /names), verified by reading back.")
final class PackCommand implements Callable<Integer> {

    @Parameters(paramLabel = "DIR", description = "the folder of .npy files (one sample each, same shape)")
    private Path folder;

    @Option(names = {"-o", "--output"}, required = true, description = "the .h5 to write")
    private Path output;

    @Override
    public Integer call() {
        Pack.Result result = Pack.pack(folder, output);
        System.out.printf("packed %d samples into %s (%.1f MB), verified: CRC32C %08x%n", result.samples(),
                result.file(), result.bytes() / 1e6, result.checksum());
        return 0;
    }
}
