package dev.memfit.io.storage;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A second process for lock tests: locks the file (or, with {@code --folder}, the folder) named by its argument,
 * prints {@code locked} and holds the lock until its standard input closes or it is killed.
 */
public final class LockHolder {

    private LockHolder() {
    }

    /**
     * Runs the holder.
     *
     * @param args the path, optionally preceded by {@code --folder}
     * @throws IOException when standard input fails
     */
    public static void main(String[] args) throws IOException {
        boolean folder = args[0].equals("--folder");
        Path target = Path.of(args[folder ? 1 : 0]);
        try (OutputLock lock = folder ? OutputLock.acquireFolder(target) : OutputLock.acquire(target)) {
            System.out.println("locked " + lock.lockFile());
            System.out.flush();
            while (System.in.read() >= 0) {
                // hold until the test closes our input
            }
        }
    }

    /**
     * Starts a holder process and waits until it holds the lock.
     *
     * @param args the holder's arguments
     * @return the running process
     * @throws IOException when it cannot start or fails before locking
     */
    public static Process start(String... args) throws IOException {
        String[] command = new String[args.length + 4];
        command[0] = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        command[1] = "-cp";
        command[2] = System.getProperty("java.class.path");
        command[3] = LockHolder.class.getName();
        System.arraycopy(args, 0, command, 4, args.length);
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String line = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream())).readLine();
        if (line == null || !line.startsWith("locked")) {
            process.destroyForcibly();
            throw new IOException("the lock holder did not lock: " + line);
        }
        return process;
    }
}
