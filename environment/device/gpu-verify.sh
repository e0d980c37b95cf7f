#!/usr/bin/env bash
# The GPU checks, run on a GPU machine that has a CUDA torch in its python3 but no Java, Maven or network, from the
# repository root with .device/ carried (environment/device/pack-gpu.sh makes it):
#   setup      ./memfit gpu-setup against that torch (DJL's JNI compiled there), then its GPU check
#   tests      the GPU-gated tests (JUnit's console launcher): each must run, none may be skipped
#   bench      ./memfit bench gpu: copies and the topic model beside torch on the same device
#   notebooks  notebooks at the default size on gpu(0) in JShell (./memfit notebooks --jshell), written back with
#              their outputs; environment/render_notebooks.py turns them into HTML where Jupyter is
# Everything goes to $OUT (gpu-verify.log, setup.log, results.tar.gz). STEPS picks steps (default: all four);
# NOTEBOOKS the notebooks, NOTEBOOK_SIZE their size; BENCH_ARGS the bench's options; GPU_SETUP_ARGS gpu-setup's.
# Exit status: the number of steps that failed.
set -u
OUT=${OUT:-/tmp/gpu-verify}
mkdir -p "$OUT/results"
exec > >(tee -a "$OUT/gpu-verify.log") 2>&1
STEPS=${STEPS:-"setup tests bench notebooks"}
NOTEBOOKS=${NOTEBOOKS:-"01-vram-lt-data-lt-ram 11-interrupt-and-resume 05-memory-optimizations 07-weighted-sampling 04-lazy-loading-particles"}
BENCH_ARGS=${BENCH_ARGS:-"--documents 100000 --terms 100000 --topics 20 --batch 256 --baseline-batch 256,16 --epochs 3 --threads 12"}
NOTEBOOK_SIZE=${NOTEBOOK_SIZE:-default}
GPU_SETUP_ARGS=${GPU_SETUP_ARGS:-}
ROOT=$(pwd)
START=$(date +%s)
failed=0
t() { echo "=== [+$(( $(date +%s) - START ))s] $*"; }
fail() { echo "FAILED: $*"; failed=$((failed + 1)); }
pack() { (cd "$OUT/results" && tar -czf "$OUT/results.tar.gz" .); }

t "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "cores $(nproc), memory $(free -g | awk '/Mem:/ {print $2}') GiB, kernel $(uname -r), python3 $(command -v python3)"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "sees GPU", torch.cuda.is_available())'

t "unpack"
# unpacked again whenever the tarball changed: a warm machine keeps the last call's unpacked jars
sum=$(sha256sum .device/gpu-carry.tar.xz | cut -d' ' -f1)
if [ ! -x .device/jdk/bin/java ] || [ "$(cat .device/unpacked.sha256 2>/dev/null)" != "$sum" ]; then
    xz -dc -T0 .device/gpu-carry.tar.xz | tar -x || { echo "cannot unpack .device/gpu-carry.tar.xz"; exit 99; }
    echo "$sum" > .device/unpacked.sha256
fi
echo "carried build: $sum ($(git log -1 --format='%h %cd' --date=iso 2>/dev/null || echo 'no git'))"
[ ! -f .device/memfit-new.jar ] || cp .device/memfit-new.jar lib/cli/target/lib/memfit-0.1.0-SNAPSHOT.jar   # a rebuilt core, carried alone
mkdir -p build && touch build/.memfit-built   # the carried jars are this tree's build: no Maven here
# Charts need fonts: a machine without fontconfig or fonts (as GPU images often are) gets the carried DejaVu fonts
# and, when it has no libfontconfig, the carried library; Java's AWT finds them through fontconfig.
if [ -d .device/fonts ] && { ! ldconfig -p | grep -q libfontconfig.so.1 || [ -z "$(fc-list 2>/dev/null | head -n 1)" ]; }; then
    fonts=$ROOT/.device/fonts
    printf '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig><dir>%s</dir><cachedir>/tmp/fontconfig-cache</cachedir></fontconfig>\n' \
        "$fonts" > "$fonts/fonts.conf"
    export FONTCONFIG_FILE=$fonts/fonts.conf
    ldconfig -p | grep -q libfontconfig.so.1 || export LD_LIBRARY_PATH=$fonts/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "fonts: the carried DejaVu fonts ($FONTCONFIG_FILE)"
fi
export JAVA_HOME=$ROOT/.device/jdk
export DJL_OFFLINE=true OPT_OUT_TRACKING=true
"$JAVA_HOME/bin/java" -version 2>&1 | head -n 1
JOPTS=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Djava.awt.headless=true
       -Dai.djl.offline=true -Dmemfit.home="$ROOT" -Dmemfit.progress=false)

if [[ " $STEPS " == *" setup "* ]]; then
    t "./memfit gpu-setup --djl-src .device/djl-src.tar.gz $GPU_SETUP_ARGS"
    # shellcheck disable=SC2086
    if ! ./memfit gpu-setup --djl-src .device/djl-src.tar.gz $GPU_SETUP_ARGS; then
        cp build/gpu/build.log "$OUT/results/jni-build.log" 2>/dev/null
        fail "gpu-setup building DJL's JNI against this torch"
        prebuilt=$(ls .device/libdjl_torch-*.so 2>/dev/null | head -n 1)
        if [ -n "$prebuilt" ]; then
            t "./memfit gpu-setup --jni $prebuilt (fallback)"
            ./memfit gpu-setup --jni "$prebuilt" || fail "gpu-setup with the prebuilt JNI"
        fi
    fi
    cp build/gpu/build.log "$OUT/results/jni-build.log" 2>/dev/null
    cat build/gpu/env.sh 2>/dev/null
fi
[ -f build/gpu/env.sh ] || { fail "no build/gpu/env.sh: nothing else can run on the GPU"; pack; exit $failed; }
# shellcheck disable=SC1091
. build/gpu/env.sh

if [[ " $STEPS " == *" tests "* ]]; then
    t "GPU-gated tests"
    # GpuTrainingTest and GpuCheckpointTest are memfit-notebook's tests (they train on dev.memfit.synthetic data)
    cp=lib/memfit/target/memfit-tests.jar:lib/notebook/target/memfit-notebook-tests.jar
    for jar in lib/cli/target/lib/*.jar; do cp="$cp:$jar"; done
    timeout 600 "$JAVA_HOME/bin/java" "${JOPTS[@]}" -jar .device/junit/junit-platform-console-standalone-*.jar execute \
        --disable-banner --details=tree --fail-if-no-tests --reports-dir "$OUT/results/junit" --class-path "$cp" \
        --select-class dev.memfit.train.GpuTrainingTest --select-class dev.memfit.train.GpuCheckpointTest \
        --select-class dev.memfit.memory.DeviceMemoryGpuTest --select-class dev.memfit.memory.BatchSizeFinderGpuTest \
        --select-class dev.memfit.PinnedMemoryTest > "$OUT/results/tests.txt" 2>&1
    status=$?
    cat "$OUT/results/tests.txt"
    [ $status = 0 ] || fail "GPU-gated tests (exit $status)"
    grep -qE '\[ *0 tests aborted *\]' "$OUT/results/tests.txt" || fail "a GPU-gated test was skipped (aborted): it did not see the GPU"
fi

if [[ " $STEPS " == *" bench "* ]]; then
    t "./memfit bench gpu $BENCH_ARGS"
    # shellcheck disable=SC2086
    timeout 900 ./memfit bench gpu --python "$(command -v python3)" $BENCH_ARGS 2>&1 | tee "$OUT/results/bench-gpu.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || fail "bench gpu"
    pack
fi

if [[ " $STEPS " == *" notebooks "* ]]; then
    for name in $NOTEBOOKS; do
        t "notebook $name ($NOTEBOOK_SIZE size, JShell)"
        timeout 900 ./memfit notebooks --jshell --size "$NOTEBOOK_SIZE" --out "$OUT/results/notebooks" "notebooks/$name.ipynb" \
            > "$OUT/results/notebook-$name.log" 2>&1 || fail "notebook $name"
        grep -E '^\[|device|FAILED' "$OUT/results/notebook-$name.log" | tail -n 8
        pack
    done
fi
t "end: $failed step(s) failed"
pack
exit $failed
