package dev.memfit.memory;

import dev.memfit.ProcessMemory;

import java.util.Locale;

/**
 * A {@link LoadingStrategy} recommended from an estimate and the machine, with the reason in one readable paragraph;
 * {@link #applyTo} puts its settings on the one loader builder, for any format and any storage:
 *
 * <pre>{@code
 * Advice advice = Advice.of(estimate, dataBytes, Advice.Machine.current());
 * System.out.println(advice.text());
 * try (Loader loader = advice.applyTo(Datasets.open(file)).optBatchSize(256).optShuffle(42).build()) { ... }
 * }</pre>
 *
 * <p>The thresholds, documented and tested:
 * <ul>
 *   <li>data up to {@value #IN_MEMORY_SHARE} of the available RAM: load it into memory
 *       ({@link LoadingStrategy.InMemory}: fastest batches; on a GPU only mini-batches go to the device);</li>
 *   <li>up to {@value #PAGE_CACHE_SHARE} of the available RAM: memory-map it ({@link LoadingStrategy.Mapped}: no
 *       copy, and the page cache keeps it warm after the first epoch);</li>
 *   <li>larger than that, when one epoch would read storage for longer than {@value #LONG_EPOCH_SECONDS} s: train
 *       on a random subset first ({@link LoadingStrategy.RandomSubset}, memory-mapped), as large as fits in
 *       {@value #IN_MEMORY_SHARE} of the RAM and reads in at most that long;</li>
 *   <li>larger, on storage slower than {@value #SLOW_STORAGE_BYTES_PER_SECOND} bytes/s: lazy loading with
 *       {@value #LAZY_THREADS} reader threads ({@link LoadingStrategy.Lazy}), or pack and copy to local scratch;</li>
 *   <li>larger, on fast storage: stream or map it ({@link LoadingStrategy.Streaming}), each epoch reading the
 *       disk;</li>
 *   <li>separately, when the device part of the estimate exceeds {@value #DEVICE_SHARE} of the device memory: a
 *       smaller batch with gradient accumulation.</li>
 * </ul>
 *
 * @param strategy the recommended loading, with its parameters (reader threads when lazy, the fraction of a subset)
 * @param reduceBatch whether the batch should shrink to fit the device
 * @param text the paragraph for a person
 */
public record Advice(LoadingStrategy strategy, boolean reduceBatch, String text) {

    /**
     * Puts the recommended loading on a loader's builder ({@link LoadingStrategy#applyTo}): its access, order,
     * threads or subset. The batch size stays the caller's (see {@link #reduceBatch()}).
     *
     * @param builder the builder, such as {@code Datasets.open(file)}
     * @return the same builder
     */
    public dev.memfit.data.LoaderBuilder applyTo(dev.memfit.data.LoaderBuilder builder) {
        return strategy.applyTo(builder);
    }

    /** Share of available RAM under which data is loaded into memory. */
    public static final double IN_MEMORY_SHARE = 0.5;
    /** Share of available RAM under which mapped data stays in the page cache. */
    public static final double PAGE_CACHE_SHARE = 0.9;
    /** Below this read speed storage counts as slow (a network file system, a spinning disk). */
    public static final long SLOW_STORAGE_BYTES_PER_SECOND = 200_000_000L;
    /** Reader threads recommended for lazy loading on slow storage. */
    public static final int LAZY_THREADS = 16;
    /** An epoch reading storage longer than this suggests a random subset first. */
    public static final long LONG_EPOCH_SECONDS = 3600;
    /** Share of device memory the device part of the estimate may take. */
    public static final double DEVICE_SHARE = 0.9;

    /**
     * What the machine offers.
     *
     * @param availableRam memory this process can still get: the OS's MemAvailable, and inside a container at most
     *     what its memory limit leaves ({@link ProcessMemory#available()})
     * @param heapLimit the JVM's {@code -Xmx}
     * @param deviceMemory memory of the training device, or -1 when training on the CPU
     * @param storageBytesPerSecond measured read speed of the data's storage, or -1 when unknown
     * @param containerLimit the container's memory limit when it is below the machine's RAM, or -1 when none applies
     */
    public record Machine(long availableRam, long heapLimit, long deviceMemory, long storageBytesPerSecond,
                          long containerLimit) {

        /**
         * A machine with no container limit.
         *
         * @param availableRam RAM the OS can give (MemAvailable)
         * @param heapLimit the JVM's {@code -Xmx}
         * @param deviceMemory memory of the training device, or -1 when training on the CPU
         * @param storageBytesPerSecond measured read speed of the data's storage, or -1 when unknown
         */
        public Machine(long availableRam, long heapLimit, long deviceMemory, long storageBytesPerSecond) {
            this(availableRam, heapLimit, deviceMemory, storageBytesPerSecond, -1);
        }

        /**
         * This machine: the memory this process can get ({@link ProcessMemory#current()}: the available RAM, or
         * what a container's memory limit leaves), this JVM's heap limit, no device, storage unknown.
         *
         * @return the machine
         */
        public static Machine current() {
            return of(ProcessMemory.current());
        }

        /**
         * A machine with the given memory, this JVM's heap limit, no device, storage unknown.
         *
         * @param memory what this process may use
         * @return the machine
         */
        public static Machine of(ProcessMemory memory) {
            long heap = Runtime.getRuntime().maxMemory();
            long available = memory.available();
            return new Machine(available < 0 ? heap : available, heap, -1, -1, memory.limit());
        }

        /**
         * The same machine with a measured storage speed.
         *
         * @param bytesPerSecond the storage's sequential read speed
         * @return the machine
         */
        public Machine withStorageSpeed(long bytesPerSecond) {
            return new Machine(availableRam, heapLimit, deviceMemory, bytesPerSecond, containerLimit);
        }

        /**
         * The available memory in words, saying when it is a container's limit.
         *
         * @return such as {@code "1.4 GiB (container limit 2.0 GiB)"} or {@code "12.3 GiB"}
         */
        public String ramText() {
            return containerLimit > 0
                    ? String.format(Locale.ROOT, "%s (container limit %s)", MemoryEstimator.human(availableRam),
                    MemoryEstimator.human(containerLimit))
                    : MemoryEstimator.human(availableRam);
        }
    }

    /**
     * What an epoch reads from storage when the data is read where it lies (mapped or streamed), and how long that
     * takes, as {@link #epochReads} predicts it.
     *
     * @param dataBytes the data's size
     * @param pageCacheRoom what the page cache can hold beside this process: the memory it can still get (inside a
     *                      container, what the limit leaves)
     * @param bytesPerLaterEpoch the most each epoch after the first reads from storage, what to plan by: nothing when
     *                           the data fits in that room (the page cache keeps it), all of it when it does not (in
     *                           file order the cache evicts most pages before the next epoch comes back to them; see
     *                           {@link #leastBytesPerLaterEpoch()} for the part it may keep)
     * @param secondsPerLaterEpoch those bytes at the storage's measured sequential speed (an epoch in file order or
     *                             block-shuffled), or -1 when the speed is unknown
     */
    public record EpochReads(long dataBytes, long pageCacheRoom, long bytesPerLaterEpoch, double secondsPerLaterEpoch) {

        /**
         * The least an epoch after the first can read from storage: the data less the page cache's room. Linux keeps
         * part of a file it sees read again (its active list), often a little more each epoch until it lets go of it
         * again (measured inside a 320 MiB limit on an 800 MiB file: 2.6% less read each epoch down to 669 MiB by the
         * seventh, then 774, 791 and 800 MiB), but never more than the room, so later epochs read between this and
         * {@link #bytesPerLaterEpoch()}.
         *
         * @return bytes; 0 when the data fits, or when the room is unknown
         */
        public long leastBytesPerLaterEpoch() {
            return bytesPerLaterEpoch == 0 || pageCacheRoom < 0 ? 0 : Math.max(0, dataBytes - pageCacheRoom);
        }

        /**
         * {@link #leastBytesPerLaterEpoch()} at the storage's measured speed.
         *
         * @return seconds, or -1 when the speed is unknown
         */
        public double leastSecondsPerLaterEpoch() {
            return secondsPerLaterEpoch < 0 ? -1
                    : bytesPerLaterEpoch == 0 ? 0 : secondsPerLaterEpoch * leastBytesPerLaterEpoch() / bytesPerLaterEpoch;
        }
    }

    /**
     * Predicts what each epoch after the first reads from storage and how long it takes, at most and at least, from
     * the data's size, the memory this process can still get and the storage's measured speed
     * ({@link Machine#storageBytesPerSecond()}). The first epoch reads all of the data either way.
     *
     * @param dataBytes the data's size on storage
     * @param machine what the machine offers, with a measured storage speed for the time
     * @return the prediction
     */
    public static EpochReads epochReads(long dataBytes, Machine machine) {
        long room = machine.availableRam();
        long later = room >= 0 && dataBytes <= room ? 0 : dataBytes;
        long speed = machine.storageBytesPerSecond();
        return new EpochReads(dataBytes, room, later, speed > 0 ? later / (double) speed : -1);
    }

    /**
     * Advises on a run.
     *
     * @param estimate the estimate of the run
     * @param dataBytes the size of the data set
     * @param machine what the machine offers
     * @return the advice
     */
    public static Advice of(MemoryEstimate estimate, long dataBytes, Machine machine) {
        LoadingStrategy strategy;
        StringBuilder text = new StringBuilder();
        double ram = machine.availableRam();
        String data = MemoryEstimator.human(dataBytes);
        String available = machine.ramText();
        long speed = machine.storageBytesPerSecond();
        double epochSeconds = speed > 0 ? dataBytes / (double) speed : -1;
        if (dataBytes <= IN_MEMORY_SHARE * ram) {
            strategy = LoadingStrategy.inMemory();
            text.append(String.format(Locale.ROOT, "The data (%s) fits in half of the available RAM (%s): load it into "
                    + "memory; memfit keeps it off the Java heap, and only mini-batches go to the device.", data, available));
        } else if (dataBytes <= PAGE_CACHE_SHARE * ram) {
            strategy = LoadingStrategy.mapped();
            text.append(String.format(Locale.ROOT, "The data (%s) fits in the available RAM (%s) but would crowd it: "
                    + "memory-map it; the first epoch reads the file, later ones come from the page cache.", data, available));
        } else if (epochSeconds > LONG_EPOCH_SECONDS) {
            // as large as stays in the page cache and reads in at most LONG_EPOCH_SECONDS (below 1 here)
            double bytes = (double) LONG_EPOCH_SECONDS * speed;
            if (ram > 0) {
                bytes = Math.min(bytes, IN_MEMORY_SHARE * ram);
            }
            double fraction = bytes / dataBytes;
            strategy = LoadingStrategy.randomSubset(fraction, LoadingStrategy.mapped());
            text.append(String.format(Locale.ROOT, "The data (%s) exceeds the available RAM (%s) and one epoch would read "
                    + "storage for about %.0f minutes: start on a random subset of %.3g%% of the samples (%s: it fits "
                    + "in half of the RAM and an epoch of it reads in at most %d minutes; select-random draws one), "
                    + "memory-mapped, then scale up.", data, available, epochSeconds / 60, fraction * 100,
                    MemoryEstimator.human((long) bytes), LONG_EPOCH_SECONDS / 60));
        } else if (speed > 0 && speed < SLOW_STORAGE_BYTES_PER_SECOND) {
            strategy = LoadingStrategy.lazy(LAZY_THREADS);
            text.append(String.format(Locale.ROOT, "The data (%s) exceeds the available RAM (%s) and its storage is "
                    + "slow (%s/s): load lazily with %d reader threads to overlap request latency, and consider packing "
                    + "small files into one file copied to local scratch.", data, available,
                    MemoryEstimator.human(speed), LAZY_THREADS));
        } else {
            strategy = LoadingStrategy.streaming();
            text.append(String.format(Locale.ROOT, "The data (%s) exceeds the available RAM (%s): stream or memory-map "
                    + "it; every epoch reads storage%s.", data, available,
                    epochSeconds > 0 ? String.format(Locale.ROOT, " (about %.0f s per epoch at %s/s)", epochSeconds,
                            MemoryEstimator.human(speed)) : ""));
        }
        long heap = estimate.total(MemoryEstimate.Where.HEAP);
        if (heap > 0.5 * machine.heapLimit()) {
            text.append(String.format(Locale.ROOT, " The heap part (%s) is more than half of -Xmx (%s): raise -Xmx.",
                    MemoryEstimator.human(heap), MemoryEstimator.human(machine.heapLimit())));
        }
        boolean reduce = false;
        long device = estimate.total(MemoryEstimate.Where.DEVICE);
        if (machine.deviceMemory() > 0) {
            if (device > DEVICE_SHARE * machine.deviceMemory()) {
                reduce = true;
                text.append(String.format(Locale.ROOT, " The device needs about %s of its %s: use a smaller batch "
                        + "(BatchSizeFinder) with gradient accumulation to keep the effective batch.",
                        MemoryEstimator.human(device), MemoryEstimator.human(machine.deviceMemory())));
            } else {
                text.append(String.format(Locale.ROOT, " The device part (%s) fits its memory (%s).",
                        MemoryEstimator.human(device), MemoryEstimator.human(machine.deviceMemory())));
            }
        } else {
            text.append(String.format(Locale.ROOT, " Training on the CPU: the model part (%s) lives in host memory.",
                    MemoryEstimator.human(device)));
        }
        return new Advice(strategy, reduce, text.toString());
    }

    /** Below this many cells, the single-cell guide keeps an atlas in memory. */
    public static final long ATLAS_IN_MEMORY_CELLS = 500_000;
    /** Above this many cells, the guide shards across several GPUs. */
    public static final long ATLAS_MULTI_DEVICE_CELLS = 5_000_000;

    /**
     * The loading strategy for an {@code .h5ad} atlas, from the single-cell guide's thresholds (in memory below 500k
     * cells, streaming or sharding from 500k to 5M, sharding over several GPUs beyond), corrected by this machine's
     * RAM: an atlas whose rows fit in half the RAM neither dense nor as CSR is not loaded whole whatever its cell
     * count. The result is {@link LoadingStrategy.InMemory}, {@link LoadingStrategy.Streaming} (with the defaults
     * of {@link LoadingStrategy#streaming()}; converting to shards once suits many epochs, see {@link #atlasText}) or
     * {@link LoadingStrategy.Shards} over the devices.
     *
     * @param cells n_obs
     * @param genes n_vars (or the vocabulary size after gene selection)
     * @param storedValues non-zero values of X
     * @param devices training devices available
     * @param machine this machine
     * @return the strategy
     */
    public static LoadingStrategy atlasStrategy(long cells, long genes, long storedValues, int devices, Machine machine) {
        long dense = cells * genes * Float.BYTES;
        long sparse = storedValues * (Float.BYTES + Integer.BYTES) + (cells + 1) * Long.BYTES;
        if (cells > ATLAS_MULTI_DEVICE_CELLS && devices > 1) {
            return LoadingStrategy.shards(devices);
        }
        if (cells <= ATLAS_IN_MEMORY_CELLS && Math.min(dense, sparse) <= IN_MEMORY_SHARE * machine.availableRam()) {
            return LoadingStrategy.inMemory();
        }
        return LoadingStrategy.streaming();
    }

    /**
     * The strategy in words, with the sizes behind it.
     *
     * @param cells n_obs
     * @param genes n_vars
     * @param storedValues non-zero values of X
     * @param devices training devices
     * @param machine this machine
     * @return a paragraph
     */
    public static String atlasText(long cells, long genes, long storedValues, int devices, Machine machine) {
        long dense = cells * genes * Float.BYTES;
        long sparse = storedValues * (Float.BYTES + Integer.BYTES) + (cells + 1) * Long.BYTES;
        String sizes = String.format(Locale.ROOT, "%,d cells x %,d genes: %s as dense float32, %s as CSR; RAM available %s.",
                cells, genes, MemoryEstimator.human(dense), MemoryEstimator.human(sparse), machine.ramText());
        return sizes + " " + switch (atlasStrategy(cells, genes, storedValues, devices, machine)) {
            case LoadingStrategy.InMemory _ -> dense <= IN_MEMORY_SHARE * machine.availableRam()
                    ? "Small atlas: load X into memory (LoadingStrategy.inMemory() holds it as dense float32) and sample freely."
                    : "Small atlas, but X fits in half of the RAM only as CSR, and memfit's in-memory loader holds "
                    + "dense rows: keep X as CSR in your own code, or stream the .h5ad block-shuffled "
                    + "(LoadingStrategy.streaming(), Datasets.h5ad(file).optBlockShuffle) with no set-up.";
            case LoadingStrategy.Shards _ -> String.format(Locale.ROOT, "Large atlas and %d devices: shard it and give each "
                    + "rank whole shards (DistributedShardSampler: rank r takes shards r, r+%d, ...), so each rank reads only "
                    + "its own files.", devices, devices);
            default -> "Between the in-memory and multi-GPU regimes (or too big for this RAM): convert once "
                    + "with `memfit shard` to memory-mapped shards for random access and weighted sampling over many "
                    + "epochs, or stream the .h5ad block-shuffled (Datasets.h5ad(file).optBlockShuffle) for one or two epochs with no set-up. "
                    + "Select genes first (`memfit preprocess --hvg`) to shrink every row.";
        };
    }

    /**
     * What a gene-token transformer's training needs beside what this machine (or device) has, and what to change in
     * the config when it does not fit: a smaller micro-batch with more accumulated batches (the same cells a step), a
     * shorter {@code max_length} (the attention scores grow with its square), and bf16-mixed where the engine has it.
     *
     * @param shape the transformer
     * @param batchSize cells per micro-batch ({@code training.batch_size})
     * @param accumulation micro-batches per step ({@code training.accumulate_grad_batches})
     * @param bytesPerValue 4 (float32) or 2 (bf16-mixed)
     * @param available bytes the model may take: the RAM left when training on the CPU, the device's memory on a GPU
     * @param bf16Available whether the engine can train in bf16-mixed
     * @return one paragraph: it fits, or the changes that make it fit
     */
    public static String transformer(TransformerShape shape, int batchSize, int accumulation, int bytesPerValue,
                                     long available, boolean bf16Available) {
        long need = MemoryEstimator.transformerBytes(shape, batchSize, bytesPerValue);
        long room = (long) (DEVICE_SHARE * available);
        String head = String.format(Locale.ROOT, "The transformer needs about %s at batch %d x %d tokens (%s available",
                MemoryEstimator.human(need), batchSize, shape.maxLength(), MemoryEstimator.human(available));
        if (need <= room) {
            return head + "): it fits.";
        }
        StringBuilder text = new StringBuilder(head).append("): it does not fit.");
        long cellsPerStep = (long) batchSize * accumulation;
        int smaller = batchSize;
        while (smaller > 1 && MemoryEstimator.transformerBytes(shape, smaller, bytesPerValue) > room) {
            smaller = Math.max(1, smaller / 2);
        }
        if (MemoryEstimator.transformerBytes(shape, smaller, bytesPerValue) <= room) {
            long steps = Math.ceilDiv(cellsPerStep, smaller);
            text.append(String.format(Locale.ROOT, " Set training.batch_size=%d with training.accumulate_grad_batches=%d "
                    + "(%s; %s).", smaller, steps,
                    MemoryEstimator.human(MemoryEstimator.transformerBytes(shape, smaller, bytesPerValue)),
                    smaller * steps == cellsPerStep ? String.format(Locale.ROOT, "the same %,d cells a step", cellsPerStep)
                            : String.format(Locale.ROOT, "%,d cells a step where there were %,d", smaller * steps, cellsPerStep)));
        }
        long tokens = shape.maxLength();
        while (tokens > 1 && MemoryEstimator.transformerBytes(withLength(shape, tokens), batchSize, bytesPerValue) > room) {
            tokens /= 2;
        }
        if (tokens < shape.maxLength()
                && MemoryEstimator.transformerBytes(withLength(shape, tokens), batchSize, bytesPerValue) <= room) {
            text.append(String.format(Locale.ROOT, " Or keep the batch and set tokenizer.max_length=%d (%s: the attention "
                    + "scores grow with the square of the tokens).", tokens,
                    MemoryEstimator.human(MemoryEstimator.transformerBytes(withLength(shape, tokens), batchSize, bytesPerValue))));
        }
        if (bytesPerValue == 4) {
            long half = MemoryEstimator.transformerBytes(shape, batchSize, 2);
            text.append(bf16Available
                    ? String.format(Locale.ROOT, " bf16-mixed would need %s.", MemoryEstimator.human(half))
                    : String.format(Locale.ROOT, " bf16-mixed would need %s, but this engine cannot train in bfloat16.",
                    MemoryEstimator.human(half)));
        }
        if (MemoryEstimator.transformerBytes(shape, 1, bytesPerValue) > room) {
            text.append(" Even one cell does not fit: lower model.d_model or model.n_layers.");
        }
        return text.toString();
    }

    private static TransformerShape withLength(TransformerShape shape, long tokens) {
        return new TransformerShape(shape.vocabulary(), tokens, shape.dModel(), shape.layers(), shape.heads(),
                shape.classes(), shape.maskShare());
    }
}
