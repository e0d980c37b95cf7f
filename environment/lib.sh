# Shared shell functions of ./memfit: find the JDK, install what the notebooks need, build, write the kernelspec.
# Sourced by ./memfit; expects MEMFIT_ROOT to be the repository root.

MEMFIT_MIN_JAVA=25
MEMFIT_APT_PACKAGES="jupyter-notebook jupyter-nbconvert python3-nbclient python3-ipykernel jupyter-client \
python3-numpy python3-h5py python3-mrcfile python3-anndata fontconfig fonts-dejavu-core libtcmalloc-minimal4 libdeflate0"

memfit_die() {
    echo "memfit: $*" >&2
    exit 1
}

memfit_java_version() { # prints the feature version of a java binary, or nothing
    "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | head -n 1
}

# Finds a JDK >= MEMFIT_MIN_JAVA: JAVA_HOME first, then /usr/lib/jvm/*; exports JAVA_HOME and MEMFIT_JAVA.
memfit_find_jdk() {
    local candidate version
    for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/*; do
        [ -n "$candidate" ] && [ -x "$candidate/bin/java" ] && [ -x "$candidate/bin/javac" ] || continue
        version=$(memfit_java_version "$candidate/bin/java")
        if [ -n "$version" ] && [ "${version%%.*}" -ge "$MEMFIT_MIN_JAVA" ] 2>/dev/null; then
            export JAVA_HOME="$candidate"
            export MEMFIT_JAVA="$candidate/bin/java"
            return 0
        fi
    done
    memfit_die "no JDK >= $MEMFIT_MIN_JAVA found (looked at \$JAVA_HOME='${JAVA_HOME:-}' and /usr/lib/jvm/*).
Install one, e.g. Temurin 25 (https://adoptium.net) or 'apt-get install openjdk-25-jdk' where your distribution has it,
then set JAVA_HOME to it."
}

# Checks the Debian packages the notebooks and format tests use; installs them as root, else says how.
memfit_system_packages() {
    local missing=()
    [ -x /usr/bin/jupyter ] || missing+=(jupyter)
    /usr/bin/python3 -c "import nbclient, nbconvert, jupyter_client, ipykernel" 2>/dev/null || missing+=(nbclient)
    /usr/bin/python3 -c "import numpy, h5py, mrcfile, anndata" 2>/dev/null || missing+=(numpy/h5py/mrcfile/anndata)
    # grep without -q: with pipefail, an early exit of grep -q can fail fc-list with SIGPIPE.
    command -v fc-list >/dev/null 2>&1 && fc-list 2>/dev/null | grep -i dejavu >/dev/null || missing+=(fonts)
    # wanted, not needed (so only installed beside something needed): the training commands' allocator
    # (memfit_malloc), and libdeflate, which decodes gzip chunks about twice as fast as the JDK's zlib
    if [ ${#missing[@]} -eq 0 ] && ! ls /usr/lib/*-linux-gnu/libtcmalloc_minimal.so.4 >/dev/null 2>&1; then
        echo "memfit: note: Debian's libtcmalloc-minimal4 is not installed: training on the CPU runs slower with glibc's" \
            "allocator (apt-get install libtcmalloc-minimal4)" >&2
    fi
    if [ ${#missing[@]} -eq 0 ] && ! ls /usr/lib/*-linux-gnu/libdeflate.so.0 >/dev/null 2>&1; then
        echo "memfit: note: Debian's libdeflate0 is not installed: gzip-compressed .h5ad and zarr chunks decode with" \
            "the JDK's slower zlib (apt-get install libdeflate0)" >&2
    fi
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "memfit: installing Debian packages for ${missing[*]} ..."
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >/dev/null || memfit_die "apt-get update failed"
        # shellcheck disable=SC2086
        apt-get install -y -q --no-install-recommends $MEMFIT_APT_PACKAGES >/dev/null \
            || memfit_die "apt-get install failed for: $MEMFIT_APT_PACKAGES"
    else
        memfit_die "missing ${missing[*]}. Install them with:
  sudo apt-get install $MEMFIT_APT_PACKAGES"
    fi
}

# The test suite's Debian packages (./memfit test only): chromium and its driver, which Selenium is pointed at so that
# it never downloads a browser or a driver; RELION, whose own projects the particle tests read; zarr, which writes the
# AnnData stores the zarr tests read.
MEMFIT_TEST_APT_PACKAGES="chromium chromium-driver relion python3-zarr python3-torch"
memfit_test_packages() {
    local missing=()
    [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || missing+=(chromium)
    [ -x /usr/bin/relion_refine ] || missing+=(relion)
    /usr/bin/python3 -c "import zarr" 2>/dev/null || missing+=(zarr)
    /usr/bin/python3 -c "import torch" 2>/dev/null || missing+=(torch)
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "memfit: installing Debian packages for the tests (${missing[*]}) ..."
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >/dev/null || memfit_die "apt-get update failed"
        # shellcheck disable=SC2086
        apt-get install -y -q --no-install-recommends $MEMFIT_TEST_APT_PACKAGES >/dev/null \
            || memfit_die "apt-get install failed for: $MEMFIT_TEST_APT_PACKAGES"
    else
        memfit_die "the tests need Debian's ${missing[*]}. Install them with:
  sudo apt-get install $MEMFIT_TEST_APT_PACKAGES"
    fi
}

# Builds the modules under lib/ and the kernel when a source is newer than the jars (or they are missing).
memfit_build() {
    local jar="$MEMFIT_ROOT/lib/cli/target/memfit-cli.jar" kernel="$MEMFIT_ROOT/environment/kernel/target/memfit-kernel.jar"
    # Compared with a stamp of the last build, not with a jar: Maven leaves a module's jar as it was when only a
    # module below it changed, so a jar's date would ask for a build on every command.
    local stamp="$MEMFIT_ROOT/build/.memfit-built"
    memfit_built_current() {
        [ -f "$jar" ] && [ -f "$kernel" ] && [ -f "$stamp" ] && [ -z "$(find "$MEMFIT_ROOT"/lib/*/src/main \
            "$MEMFIT_ROOT/environment/kernel/src" "$MEMFIT_ROOT/pom.xml" "$MEMFIT_ROOT"/lib/*/pom.xml \
            "$MEMFIT_ROOT/environment/kernel/pom.xml" -newer "$stamp" -type f 2>/dev/null | head -n 1)" ]
    }
    memfit_built_current && return 0
    mkdir -p "$MEMFIT_ROOT/build"
    # one build at a time: two commands started together (a terminal and a notebook) would run Maven on the same
    # target folders at once; the second waits for the first and then finds the jars current
    local lock
    exec {lock}>"$MEMFIT_ROOT/build/.memfit-build.lock"
    if command -v flock >/dev/null; then
        flock "$lock"
    fi
    if memfit_built_current; then
        exec {lock}>&-
        return 0
    fi
    echo "memfit: building (Maven wrapper; the first build downloads dependencies from Maven Central) ..."
    # stamped with the time the build started: a source saved during the build makes the next command build again
    touch "$stamp.next"
    (cd "$MEMFIT_ROOT" && ./mvnw -q -B -DskipTests package) || memfit_die "build failed: run ./mvnw -B package to see why"
    mv -f "$stamp.next" "$stamp"
    exec {lock}>&-
}

# The CLI's and the kernel's class path: the library, the benchmarks and scenarios, and their dependencies
# (lib/cli/target/lib, filled by the build). ND4J interop (lib/nd4j) is not on it: add its jars to use it.
memfit_classpath() {
    echo "$MEMFIT_ROOT/lib/cli/target/memfit-cli.jar:$MEMFIT_ROOT/lib/cli/target/lib/*"
}

memfit_java_options() {
    echo "--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Djava.awt.headless=true \
-Dai.djl.offline=true -Dmemfit.home=$MEMFIT_ROOT"
}

# The JVM flags of the Spark engine (the same list as lib/spark's Surefire argLine: Spark's launcher's --add-opens
# but sun.security.action, gone from JDK 25's java.base),
# and a log4j2 configuration that keeps Spark's INFO lines off the console.
memfit_spark_options() {
    echo "--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.invoke=ALL-UNNAMED \
--add-opens=java.base/java.lang.reflect=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED \
--add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED \
--add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED \
--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED \
--add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/sun.nio.cs=ALL-UNNAMED \
--add-opens=java.base/sun.util.calendar=ALL-UNNAMED \
-Djdk.reflect.useDirectMethodHandle=false -Dio.netty.tryReflectionSetAccessible=true \
-Dlog4j2.configurationFile=$MEMFIT_ROOT/environment/spark-log4j2.properties"
}

# Writes the 'memfit' kernelspec under build/jupyter and points JUPYTER_PATH at it.
memfit_kernelspec() {
    memfit_write_kernelspec memfit "Java (memfit)" "" "" "$MEMFIT_ROOT/lib/cli/target/lib/*.jar" ""
    memfit_kernelspec_spark
    export JUPYTER_PATH="$MEMFIT_ROOT/build/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"
}

# Writes one kernelspec: NAME, DISPLAY name, extra JVM flags, extra JVM class path (before the kernel's jars), the
# class path JShell sees (RJK_CLASSPATH, ';'-separated) and extra lines for the launcher's environment.
memfit_write_kernelspec() {
    local name="$1" display="$2" jvm_flags="$3" jvm_classpath="$4" shell_classpath="$5" extra_env="$6"
    local dir="$MEMFIT_ROOT/build/jupyter/kernels/$name"
    mkdir -p "$dir"
    cat > "$dir/launch.sh" <<LAUNCH
#!/usr/bin/env bash
# Written by memfit's environment/lib.sh: kernel '$name'. The heap is set per run: MEMFIT_KERNEL_HEAP (default 2g).
# The kernel's own output (class path lines, warnings) goes to kernel.log beside this file; cell output goes to
# the notebook as usual.
exec >>"$dir/kernel.log" 2>&1
# PyTorch's OpenMP threads spin after every op by default, starving the loader's reader threads on a small machine;
# a short spin (see memfit_setup) keeps the next op from waiting for a sleeping thread.
export OMP_WAIT_POLICY="\${OMP_WAIT_POLICY:-PASSIVE}" GOMP_SPINCOUNT="\${GOMP_SPINCOUNT:-3000}"
${extra_env}# The GPU settings of ./memfit gpu-setup, read at each start so that a later gpu-setup needs no new kernelspec.
GPU_ENV="\${MEMFIT_GPU_DIR:-$MEMFIT_ROOT/build/gpu}/env.sh"
if [ -f "\$GPU_ENV" ] && [ "\${MEMFIT_GPU:-1}" != 0 ]; then . "\$GPU_ENV"; fi
# ./memfit notebooks --memory: the runner names a control group (its cgroup.procs files); the kernel joins it before
# the JVM starts, so that everything it allocates and reads counts against the limit from the start, and the JVM
# sees the limit (its processors, memfit's ProcessMemory); the heap stays MEMFIT_KERNEL_HEAP
if [ -n "\${MEMFIT_CGROUP_PROCS:-}" ]; then
  IFS=: read -ra memfit_groups <<< "\$MEMFIT_CGROUP_PROCS"
  for procs in "\${memfit_groups[@]}"; do
    echo \$\$ > "\$procs" || { echo "memfit: the kernel cannot join the control group \$procs" >&2; exit 1; }
  done
fi
exec "$MEMFIT_JAVA" -Xmx\${MEMFIT_KERNEL_HEAP:-2g} $(memfit_java_options) ${jvm_flags:+$jvm_flags }\\
  -cp "$MEMFIT_ROOT/environment/kernel/target/memfit-kernel.jar:${jvm_classpath:+$jvm_classpath:}$MEMFIT_ROOT/environment/kernel/target/lib/rapaio-jupyter-kernel.jar" \\
  dev.memfit.kernel.KernelMain "\$@"
LAUNCH
    chmod +x "$dir/launch.sh"
    cat > "$dir/kernel.json" <<JSON
{
  "argv": ["$dir/launch.sh", "{connection_file}"],
  "display_name": "$display",
  "language": "java",
  "interrupt_mode": "message",
  "env": {
    "RJK_CLASSPATH": "$shell_classpath",
    "DJL_OFFLINE": "true",
    "OPT_OUT_TRACKING": "true",
    "MEMFIT_HOME": "$MEMFIT_ROOT"
  }
}
JSON
}

# The training commands (train, bench transformer) run with tcmalloc (Debian's libtcmalloc-minimal4) preloaded when
# it is installed: PyTorch's CPU tensors above 32 MiB (a transformer's attention scores at batch 64 and 256 tokens are
# 64 MiB) come from glibc's mmap and go back with munmap on every step, and the page faults of touching them again
# took half of a training step's time here (`./memfit bench transformer`: 77.3k against 39.5k tokens/s; the torch
# baseline, a child process, inherits the same allocator). Other commands keep glibc: their memory figures are
# measured with it. MEMFIT_MALLOC=glibc turns it off.
memfit_malloc() {
    [ "${MEMFIT_MALLOC:-tcmalloc}" = glibc ] && return 0
    local lib="/usr/lib/$(uname -m)-linux-gnu/libtcmalloc_minimal.so.4"
    if [ -f "$lib" ]; then
        case ":${LD_PRELOAD:-}:" in *":$lib:"*) ;; *) export LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" ;; esac
    fi
    return 0
}

# The GPU settings ./memfit gpu-setup recorded (PYTORCH_LIBRARY_PATH, PYTORCH_VERSION, PYTORCH_FLAVOR, DJL's engine
# cache, the CUDA library folder), when there are any; MEMFIT_GPU=0 ignores them (DJL's CPU natives from the jars).
memfit_gpu_env() {
    local env="${MEMFIT_GPU_DIR:-$MEMFIT_ROOT/build/gpu}/env.sh"
    if [ -f "$env" ] && [ "${MEMFIT_GPU:-1}" != 0 ]; then
        # shellcheck disable=SC1090
        . "$env"
    fi
    return 0
}

# Writes the 'memfit-spark' kernelspec beside 'memfit', for the notebooks that run Spark in the kernel (their metadata
# names it): Spark's JVM flags and a loopback driver, and lib/spark's class path (memfit-spark.jar, then
# target/classpath.txt: Spark first, then memfit and its libraries) on the JVM's class path, where Spark's own class
# loading finds it, and in JShell's. The other notebooks keep the plain kernel: no Spark jars, flags or memory.
memfit_kernelspec_spark() {
    local dir="$MEMFIT_ROOT/build/jupyter/kernels/memfit-spark" jar="$MEMFIT_ROOT/lib/spark/target/memfit-spark.jar"
    local deps="$MEMFIT_ROOT/lib/spark/target/classpath.txt" classpath
    if [ ! -f "$jar" ] || [ ! -f "$deps" ]; then
        rm -rf "$dir"   # no stale kernel: a Spark notebook then says the kernel is missing
        return 0
    fi
    classpath="$jar:$(cat "$deps")"
    memfit_write_kernelspec memfit-spark "Java (memfit + Spark)" "$(memfit_spark_options)" "$classpath" \
        "${classpath//:/;}" 'export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
'
}

# Everything a command needs before it runs.
memfit_setup() {
    export DJL_OFFLINE=true OPT_OUT_TRACKING=true
    # PyTorch's OpenMP threads spin after every op by default, starving loader threads on a small machine: with one
    # of two cores busy elsewhere, a notebook-03-like epoch took 4.0-4.7 s spinning and 2.0-2.3 s passive. Fully
    # passive threads sleep between ops, and waking them cost small models half their step time with 2 threads (a
    # d_model-16 transformer: 1.07-1.31 s an epoch passive, 0.61-0.64 s with a 3,000-iteration spin, 0.58-0.76 s with
    # 10,000-30,000; libgomp, which DJL's PyTorch loads): a few microseconds of spinning, then sleep.
    export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-3000}"
    memfit_find_jdk
    memfit_gpu_env
    memfit_system_packages
    memfit_build
    memfit_kernelspec
}
