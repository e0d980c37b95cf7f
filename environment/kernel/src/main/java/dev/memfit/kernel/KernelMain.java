package dev.memfit.kernel;

import org.rapaio.jupyter.kernel.MainApp;
import org.rapaio.jupyter.kernel.channels.LoopThread;

import java.security.CodeSource;

/**
 * Starts the rapaio Java kernel after checking that memfit's race-free {@link LoopThread} is the one loaded.
 *
 * <p>The class path must list {@code memfit-kernel.jar} before {@code rapaio-jupyter-kernel.jar}; the kernelspec
 * written by {@code environment/lib.sh} does. A wrong order would bring the start-up hangs back silently, so it is
 * an error here.
 */
public final class KernelMain {

    private KernelMain() {
    }

    /**
     * Runs the kernel.
     *
     * @param args the connection file, as Jupyter passes it
     * @throws Exception whatever the kernel throws
     */
    public static void main(String[] args) throws Exception {
        CodeSource loopSource = LoopThread.class.getProtectionDomain().getCodeSource();
        CodeSource ownSource = KernelMain.class.getProtectionDomain().getCodeSource();
        if (loopSource == null || ownSource == null || !loopSource.getLocation().equals(ownSource.getLocation())) {
            System.err.println("memfit kernel: LoopThread was loaded from " + (loopSource == null ? "?" : loopSource.getLocation())
                    + ", not from memfit-kernel.jar; put memfit-kernel.jar first on the class path "
                    + "(re-run ./memfit setup to rewrite the kernelspec)");
            System.exit(3);
        }
        MainApp.main(args);
    }
}
