#!/usr/bin/env bash
# ./memfit gpu-setup: lets memfit train on the GPU through the CUDA build of torch that a Python environment already
# has. DJL's own CUDA natives for libtorch 2.7.1 are not on Maven Central (over its 1 GB file limit), so this builds
# DJL's JNI library (libdjl_torch.so) against that torch, installs it where DJL looks for it, and records the settings
# in build/gpu/env.sh, which ./memfit commands and the notebook kernel read (environment/lib.sh).
#
# Checked so far: the recipe's manual build on an H100 (torch 2.11.0+cu130, USE_CUDA) trained the topic model on
# gpu(0); this script, with --cpu against Debian's torch 1.13.0a0, compiled the JNI (V1_13_X code paths) and DJL
# 0.35.1 then ran notebook 00 on torch 1.13 with the same losses as on its bundled 2.7.1. Not yet run on a GPU.
#
# usage: gpu-setup.sh [--python P] [--djl-src TARBALL] [--jni PREBUILT.so] [--cuda-arch LIST] [--cpu] [--dry-run]
# Run through ./memfit gpu-setup (it sets MEMFIT_ROOT and finds the JDK). Exit status 0 when the GPU is set up.
set -euo pipefail

MEMFIT_ROOT=${MEMFIT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
GPU_DIR=${MEMFIT_GPU_DIR:-$MEMFIT_ROOT/build/gpu}
# DJL's version from the build (pom.xml), so the JNI's name matches the jars on the class path
DJL_VERSION=$(sed -n 's#.*<djl.version>\(.*\)</djl.version>.*#\1#p' "$MEMFIT_ROOT/pom.xml" | head -n 1)
DJL_URL="https://github.com/deepjavalibrary/djl/archive/refs/tags/v$DJL_VERSION.tar.gz"

die() {
    echo "memfit gpu-setup: $*" >&2
    exit 1
}
say() { echo "memfit gpu-setup: $*"; }

usage() {
    cat <<USAGE
usage: ./memfit gpu-setup [--python P] [--djl-src TARBALL] [--jni PREBUILT.so] [--cuda-arch LIST] [--cpu] [--dry-run]

Builds DJL $DJL_VERSION's JNI library against the CUDA torch of a Python environment and points memfit at it.
  --python P         the Python whose torch to use (default: python3 on the PATH)
  --djl-src TARBALL  DJL's JNI sources (a tarball of DJL's repository at v$DJL_VERSION, or the part of it holding
                     engines/pytorch/pytorch-native, engines/pytorch/pytorch-engine and api/src/main/native).
                     Without it the sources are downloaded from GitHub only when MEMFIT_DJL_ONLINE=1:
                     $DJL_URL
  --jni FILE         install this libdjl_torch.so instead of building one (built for exactly this torch)
  --cuda-arch LIST   TORCH_CUDA_ARCH_LIST for the build (default: the GPU's compute capability, else torch's list)
  --cpu              build against a CPU-only torch (to check the build on a machine without a GPU)
  --dry-run          print what would be done, change nothing
Writes $GPU_DIR/env.sh; delete that file to go back to DJL's CPU natives.
USAGE
}

PYTHON=python3
DJL_SRC=""
PREBUILT=""
CUDA_ARCH=""
ALLOW_CPU=0
DRY_RUN=0
while [ $# -gt 0 ]; do
    case "$1" in
        --python) [ $# -ge 2 ] || die "--python needs a path"; PYTHON=$2; shift 2 ;;
        --djl-src) [ $# -ge 2 ] || die "--djl-src needs a tarball"; DJL_SRC=$2; shift 2 ;;
        --jni) [ $# -ge 2 ] || die "--jni needs a file"; PREBUILT=$2; shift 2 ;;
        --cuda-arch) [ $# -ge 2 ] || die "--cuda-arch needs a list such as '9.0' or '8.0;8.6'"; CUDA_ARCH=$2; shift 2 ;;
        --cpu) ALLOW_CPU=1; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done

# Prints a command as it would be typed (each word quoted only when it needs it).
show() {
    local word line=""
    for word in "$@"; do
        if [[ "$word" =~ ^[A-Za-z0-9_./=:,+@%-]*$ ]] && [ -n "$word" ] || [ "$word" = "&&" ]; then
            line+="$word "
        else
            line+="'${word//"'"/"'\\''"}' "
        fi
    done
    echo "  ${line% }"
}
# Runs a command, or prints it under --dry-run.
act() {
    if [ "$DRY_RUN" = 1 ]; then show "$@"; else "$@"; fi
}

# ---- 1. the torch of that Python -------------------------------------------------------------------------------
PY_PATH=$(command -v "$PYTHON" 2>/dev/null) || die "no Python '$PYTHON' (give the one whose torch has CUDA with --python)"
# One line per answer, key=value; torch.cuda.* below never needs a GPU except the capability.
PROBE=$(cat <<'PY'
import os, sys
try:
    import torch
except Exception as e:
    print("error=" + type(e).__name__ + ": " + str(e).replace("\n", " "))
    sys.exit(0)
import torch.utils
print("version=" + torch.__version__)
print("cuda=" + str(torch.version.cuda))
print("lib=" + os.path.join(os.path.dirname(torch.__file__), "lib"))
print("cmake=" + torch.utils.cmake_prefix_path)
print("site=" + os.path.dirname(os.path.dirname(torch.__file__)))
print("cxx11abi=" + str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))
cap = ""
try:
    if torch.version.cuda and torch.cuda.is_available():
        cap = "%d.%d" % torch.cuda.get_device_capability(0)
except Exception:
    pass
print("capability=" + cap)
try:
    arch = torch.cuda.get_arch_list() if torch.version.cuda else []
except Exception:
    arch = []
print("arch=" + ";".join(a[3:4] + "." + a[4:] for a in arch if a.startswith("sm_") and len(a) >= 5))
PY
)
ANSWERS=$("$PY_PATH" -c "$PROBE" 2>&1) || die "$PY_PATH failed to run: $(echo "$ANSWERS" | tail -n 1)"
answer() { echo "$ANSWERS" | sed -n "s/^$1=//p" | head -n 1; }
if [ -n "$(answer error)" ]; then
    die "no torch in $PY_PATH ($(answer error)); install a CUDA build, e.g. '$PY_PATH -m pip install torch --index-url https://download.pytorch.org/whl/cu128', or give the Python of an environment that has one with --python"
fi
TORCH_FULL=$(answer version)
[ -n "$TORCH_FULL" ] || die "$PY_PATH did not report a torch version; it printed: $(echo "$ANSWERS" | tail -n 3)"
# DJL's engine cache folder names use x.y.z; a local or nightly build reports e.g. 2.11.0a0+git1234
PT_VERSION=$(echo "$TORCH_FULL" | sed -n 's/^\([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p')
[ -n "$PT_VERSION" ] || die "cannot read torch's version from '$TORCH_FULL' ($PY_PATH)"
TORCH_CUDA=$(answer cuda)
TORCH_LIB=$(answer lib)
TORCH_CMAKE=$(answer cmake)
SITE=$(answer site)
if [ "$TORCH_CUDA" = None ] || [ -z "$TORCH_CUDA" ]; then
    if [ "$ALLOW_CPU" = 1 ]; then
        PT_FLAVOR=cpu
        say "torch $TORCH_FULL in $PY_PATH has no CUDA: building a CPU-only JNI (--cpu)"
    else
        die "no CUDA torch in $PY_PATH: torch $TORCH_FULL (CPU only); install a CUDA build, e.g. '$PY_PATH -m pip install torch --index-url https://download.pytorch.org/whl/cu128', or give the Python of an environment that has one with --python (--cpu builds against this one anyway)"
    fi
else
    PT_FLAVOR=cu${TORCH_CUDA//./}   # DJL loads libtorch_cuda only when the flavor contains "cu"
fi
[ -f "$TORCH_LIB/libtorch.so" ] || die "torch $TORCH_FULL in $PY_PATH has no libtorch.so in $TORCH_LIB (DJL needs the shared library)"
PT_MAJOR=${PT_VERSION%%.*}
PT_MINOR=${PT_VERSION#*.}; PT_MINOR=${PT_MINOR%%.*}
say "torch $TORCH_FULL (flavor $PT_FLAVOR) from $PY_PATH, libraries in $TORCH_LIB"

case "$(uname -m)" in
    x86_64|amd64) CLASSIFIER=linux-x86_64 ;;
    aarch64|arm64) CLASSIFIER=linux-aarch64 ;;
    *) die "DJL has no PyTorch build for $(uname -s) $(uname -m)" ;;
esac
ENGINE_CACHE=$GPU_DIR/djl
JNI_TARGET=$ENGINE_CACHE/pytorch/$PT_VERSION-$PT_FLAVOR-$CLASSIFIER/$DJL_VERSION-libdjl_torch.so

# ---- 2. the tools of the build -----------------------------------------------------------------------------------
if [ -z "$PREBUILT" ]; then
    CMAKE=$(command -v cmake 2>/dev/null) || die "no cmake: DJL's JNI is built with CMake; install it, e.g. 'apt-get install cmake' or '$PY_PATH -m pip install cmake'"
    MAKE=$(command -v make 2>/dev/null) || die "no make: install it, e.g. 'apt-get install make'"
    CXX_BIN=""
    for candidate in "${CXX:-}" c++ g++ clang++; do
        [ -n "$candidate" ] && CXX_BIN=$(command -v "$candidate" 2>/dev/null) && break
    done
    [ -n "$CXX_BIN" ] || die "no C++ compiler (looked for \$CXX, c++, g++, clang++): install one, e.g. 'apt-get install g++'"
    NVCC=""
    if [ "$PT_FLAVOR" != cpu ]; then
        # $CUDA_HOME, when set, is the toolkit to use; else the PATH's, else the usual place
        for candidate in "${CUDACXX:-}" "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" "$(command -v nvcc 2>/dev/null || true)" \
                "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"; do
            [ -n "$candidate" ] && [ -x "$candidate" ] && NVCC=$candidate && break
        done
        [ -n "$NVCC" ] || die "no nvcc: torch $TORCH_FULL needs the CUDA toolkit's compiler to build DJL's JNI with CUDA; install CUDA toolkit $TORCH_CUDA (the version torch was built with), or set CUDACXX or CUDA_HOME (looked at \$CUDACXX, ${CUDA_HOME:+$CUDA_HOME/bin, }the PATH and ${CUDA_HOME:-/usr/local/cuda}/bin)"
        NVCC_CUDA=$("$NVCC" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9.]*\),.*/\1/p' | head -n 1)
        if [ -n "$NVCC_CUDA" ] && [ "${NVCC_CUDA%%.*}" != "${TORCH_CUDA%%.*}" ]; then
            say "warning: nvcc is CUDA $NVCC_CUDA but torch was built with CUDA $TORCH_CUDA; the build may fail (install toolkit $TORCH_CUDA or set CUDACXX)"
        fi
        if [ -z "$CUDA_ARCH" ]; then
            CUDA_ARCH=$(answer capability)
            [ -n "$CUDA_ARCH" ] || CUDA_ARCH=$(answer arch)
            [ -n "$CUDA_ARCH" ] || die "torch cannot see a GPU and reports no architectures: give the GPU's compute capability with --cuda-arch (e.g. 9.0 for an H100)"
        fi
    fi
    [ -n "${JAVA_HOME:-}" ] && [ -f "$JAVA_HOME/include/jni.h" ] || die "no JDK headers: \$JAVA_HOME/include/jni.h not found (JAVA_HOME='${JAVA_HOME:-}'); run through ./memfit gpu-setup or set JAVA_HOME to a JDK"
fi

# libcudart.so for DJL's CudaUtils (it loads "cudart" through JNA to count GPUs and read their memory)
CUDA_LIBS=""
if [ "$PT_FLAVOR" != cpu ]; then
    nvcc_home=""
    [ -n "${NVCC:-}" ] && nvcc_home=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
    for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64" "${nvcc_home:+$nvcc_home/lib64}"; do
        if [ -n "$dir" ] && [ -e "$dir/libcudart.so" ]; then CUDA_LIBS=$dir; break; fi
    done
    [ -n "$CUDA_LIBS" ] || say "warning: no libcudart.so found (looked in ${CUDA_HOME:-/usr/local/cuda}/lib64 and nvcc's lib64); DJL may not count the GPUs: add the folder holding libcudart.so to LD_LIBRARY_PATH"
fi

# ---- 3. the JNI: prebuilt, or built from DJL's sources -----------------------------------------------------------
if [ -n "$PREBUILT" ]; then
    [ -f "$PREBUILT" ] || die "no such JNI library: $PREBUILT"
    say "installing the prebuilt $PREBUILT (it must have been built against torch $TORCH_FULL)"
    JNI_BUILT=$PREBUILT
else
    SRC_DIR=$GPU_DIR/djl-src
    BUILD=$GPU_DIR/cmake
    if [ -z "$DJL_SRC" ]; then
        if [ "${MEMFIT_DJL_ONLINE:-0}" = 1 ]; then
            DJL_SRC=$GPU_DIR/djl-v$DJL_VERSION.tar.gz
            say "downloading DJL's sources at v$DJL_VERSION (MEMFIT_DJL_ONLINE=1): $DJL_URL"
            act mkdir -p "$GPU_DIR"
            act curl -fsSL -o "$DJL_SRC.partial" "$DJL_URL"
            act mv "$DJL_SRC.partial" "$DJL_SRC"
        else
            die "DJL's JNI sources are needed: give them with --djl-src TARBALL (DJL's repository at tag v$DJL_VERSION, $DJL_URL), or set MEMFIT_DJL_ONLINE=1 to let gpu-setup download that tarball"
        fi
    elif [ "$DRY_RUN" = 0 ] && [ ! -f "$DJL_SRC" ]; then
        die "no such tarball: $DJL_SRC"
    fi
    say "DJL $DJL_VERSION's JNI sources from $DJL_SRC"
    act rm -rf "$SRC_DIR" "$BUILD"
    act mkdir -p "$SRC_DIR" "$BUILD"
    # GitHub's archive has one top folder (djl-0.35.1/); a trimmed tarball has none
    if [ "$DRY_RUN" = 1 ]; then
        show tar -xzf "$DJL_SRC" -C "$SRC_DIR"
    else
        first=$(tar -tzf "$DJL_SRC" 2>/dev/null | head -n 1 || true)   # || true: head closes the pipe early
        strip=()
        case "$first" in djl-*/*|djl-*) strip=(--strip-components=1) ;; esac
        tar -xzf "$DJL_SRC" -C "$SRC_DIR" "${strip[@]}" || die "cannot unpack $DJL_SRC"
        [ -f "$SRC_DIR/engines/pytorch/pytorch-native/CMakeLists.txt" ] \
            || die "$DJL_SRC holds no engines/pytorch/pytorch-native/CMakeLists.txt: is it DJL's repository at v$DJL_VERSION?"
    fi
    NATIVE=$SRC_DIR/engines/pytorch/pytorch-native
    ENGINE_JAVA=$SRC_DIR/engines/pytorch/pytorch-engine/src/main/java
    if [ "$PT_MAJOR" -gt 2 ] || { [ "$PT_MAJOR" = 2 ] && [ "$PT_MINOR" -ge 14 ]; }; then
        say "torch $PT_VERSION's headers need C++20; DJL's CMakeLists.txt pins C++17: patching it to 20 in the build copy"
        act sed -i 's/CXX_STANDARD 17/CXX_STANDARD 20/' "$NATIVE/CMakeLists.txt"
    fi
    if [ "$PT_MAJOR" -lt 2 ] && [ "$PT_MAJOR$PT_MINOR" != 113 ]; then
        say "warning: DJL $DJL_VERSION's JNI builds against torch 1.13 and 2.x; torch $PT_VERSION is not expected to compile"
    fi
    # DJL's build.sh: torch 1.13, 2.0 and 2.1 take the V1_13_X code paths
    PT_DEFINE=()
    case "$PT_VERSION" in 1.13.*|2.0.*|2.1.*) PT_DEFINE=(-DPT_VERSION=V1_13_X) ;; esac
    # the JNI header, from the Java class that declares the native methods, as DJL's build.sh makes it
    API_JAR=""
    for jar in "$MEMFIT_ROOT/lib/cli/target/lib/api-$DJL_VERSION.jar" "$HOME/.m2/repository/ai/djl/api/$DJL_VERSION/api-$DJL_VERSION.jar"; do
        [ -f "$jar" ] && API_JAR=$jar && break
    done
    if [ -z "$API_JAR" ]; then
        [ "$DRY_RUN" = 1 ] || die "DJL's api-$DJL_VERSION.jar is not built yet: run ./memfit setup first"
        API_JAR="lib/cli/target/lib/api-$DJL_VERSION.jar"
    fi
    act "${JAVA_HOME:-<JDK>}/bin/javac" -cp "$API_JAR" -sourcepath "$ENGINE_JAVA" -h "$NATIVE/build/include" \
        -d "$BUILD/classes" "$ENGINE_JAVA/ai/djl/pytorch/jni/PyTorchLibrary.java"
    CUDA_ARGS=()
    INCLUDES=""
    if [ "$PT_FLAVOR" != cpu ]; then
        CUDA_ARGS=(-DUSE_CUDA=1 "-DCMAKE_CUDA_COMPILER=$NVCC" "-DTORCH_CUDA_ARCH_LIST=$CUDA_ARCH")
        # pip's CUDA wheels carry the math libraries' headers (cublas_v2.h, cusolverDn.h) that torch's CUDA headers include
        for dir in "$SITE"/nvidia/*/include; do [ -d "$dir" ] && INCLUDES+=" -I$dir"; done
    fi
    say "building the JNI (cmake + make: about 35 s on 16 cores, 15 min on one busy core; log in $GPU_DIR/build.log)"
    log=$GPU_DIR/build.log
    build() {
        (cd "$BUILD" && "$CMAKE" -DCMAKE_PREFIX_PATH="$TORCH_CMAKE" -DCMAKE_BUILD_TYPE=Release "${PT_DEFINE[@]}" "${CUDA_ARGS[@]}" \
            -DCMAKE_CXX_COMPILER="$CXX_BIN" -DCMAKE_CXX_FLAGS="${INCLUDES# }" \
            -DJAVA_INCLUDE_PATH="$JAVA_HOME/include" -DJAVA_INCLUDE_PATH2="$JAVA_HOME/include/linux" \
            -DJAVA_AWT_INCLUDE_PATH=NotNeeded -DJAVA_JVM_LIBRARY=NotNeeded "$NATIVE" \
            && "$MAKE" -j"${MEMFIT_BUILD_JOBS:-$(nproc)}")
    }
    if [ "$DRY_RUN" = 1 ]; then
        show cd "$BUILD"
        show "$CMAKE" -DCMAKE_PREFIX_PATH="$TORCH_CMAKE" -DCMAKE_BUILD_TYPE=Release "${PT_DEFINE[@]}" "${CUDA_ARGS[@]}" \
            -DCMAKE_CXX_COMPILER="$CXX_BIN" -DCMAKE_CXX_FLAGS="${INCLUDES# }" \
            -DJAVA_INCLUDE_PATH="$JAVA_HOME/include" -DJAVA_INCLUDE_PATH2="$JAVA_HOME/include/linux" \
            -DJAVA_AWT_INCLUDE_PATH=NotNeeded -DJAVA_JVM_LIBRARY=NotNeeded "$NATIVE"
        show "$MAKE" -j"${MEMFIT_BUILD_JOBS:-$(nproc)}"
    elif ! build > "$log" 2>&1; then
        first_error=$(grep -m 1 -E 'error|Error' "$log" || tail -n 1 "$log" || true)
        die "DJL $DJL_VERSION's JNI did not compile against torch $TORCH_FULL: ${first_error:-no error line} (full log: $log)"
    fi
    if [ "$PT_FLAVOR" != cpu ]; then
        # as DJL's build.sh does: no direct link to cudart/nvrtc (torch loads its own), relinked keeping the $ORIGIN rpath
        LINK=$BUILD/CMakeFiles/djl_torch.dir/link.txt
        act sed -i -r 's#[^ ]*lib(cudart|nvrtc)[^ ]*\.so[^ ]*##g; s#-lCUDA_nvrtc_LIBRARY-NOTFOUND##g; s#\$ORIGIN#\\$ORIGIN#g' "$LINK"
        act rm -f "$BUILD/libdjl_torch.so"
        if [ "$DRY_RUN" = 1 ]; then
            show cd "$BUILD" "&&" bash "$LINK"
        else
            (cd "$BUILD" && bash "$LINK") >> "$log" 2>&1 || die "relinking the JNI without cudart failed: see $log"
        fi
    fi
    JNI_BUILT=$BUILD/libdjl_torch.so
    [ "$DRY_RUN" = 1 ] || [ -f "$JNI_BUILT" ] || die "the build made no libdjl_torch.so: see $log"
fi

# ---- 4. install where DJL looks, and record the settings ---------------------------------------------------------
# DJL's lookup (LibUtils.findJniLibrary): $PYTORCH_LIBRARY_PATH/{0.35.1-,}libdjl_torch.so, then
# $ENGINE_CACHE_DIR/pytorch/<PYTORCH_VERSION>-<PYTORCH_FLAVOR>-<classifier>/<djl>-libdjl_torch.so. The engine cache is
# memfit's own folder, so nothing is written into the Python environment.
act mkdir -p "$(dirname "$JNI_TARGET")"
act cp "$JNI_BUILT" "$JNI_TARGET.partial"
act mv "$JNI_TARGET.partial" "$JNI_TARGET"

q() { printf '%q' "$1"; }
ENV_TEXT="# Written by ./memfit gpu-setup on $(date -u +%Y-%m-%dT%H:%M:%SZ): torch $TORCH_FULL from $PY_PATH.
# Read by environment/lib.sh for ./memfit commands and by the notebook kernel. Delete this file to use DJL's CPU natives.
export PYTORCH_LIBRARY_PATH=$(q "$TORCH_LIB")
export PYTORCH_VERSION=$(q "$PT_VERSION")
export PYTORCH_FLAVOR=$(q "$PT_FLAVOR")
export DJL_CACHE_DIR=$(q "$ENGINE_CACHE")
export ENGINE_CACHE_DIR=$(q "$ENGINE_CACHE")
export MEMFIT_GPU_JNI=$(q "$JNI_TARGET")"
if [ -n "$CUDA_LIBS" ]; then
    ENV_TEXT+="
case \":\${LD_LIBRARY_PATH:-}:\" in *:$(q "$CUDA_LIBS"):*) ;; *) export LD_LIBRARY_PATH=$(q "$CUDA_LIBS")\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} ;; esac"
fi
if [ "$DRY_RUN" = 1 ]; then
    say "would install the JNI as $JNI_TARGET and write $GPU_DIR/env.sh:"
    echo "$ENV_TEXT" | sed 's/^/    /'
    exit 0
fi
printf '%s\n' "$ENV_TEXT" > "$GPU_DIR/env.sh.partial"
mv "$GPU_DIR/env.sh.partial" "$GPU_DIR/env.sh"
say "installed $JNI_TARGET; settings in $GPU_DIR/env.sh (./memfit commands and the notebook kernel read them)"
