#!/usr/bin/env bash
# Packs what a GPU machine with a CUDA torch but no Java, Maven or network needs to run memfit's GPU checks
# (environment/device/gpu-verify.sh): a jlinked JDK (javac and jni.h for ./memfit gpu-setup, JShell for the notebooks),
# the built jars (less DJL's CPU natives, the S3 test server's stack, ICU (Tablesaw's CSV charset guess) and other
# platforms' natives), the test jars (the core's and memfit-notebook's), JUnit's console launcher, fonts for the
# charts, and DJL's JNI sources. Writes .device/gpu-carry.tar.xz (unpacked over the repository root there) and copies
# the JNI sources beside it. Run after ./memfit setup (or ./mvnw package) on this machine. The device tool carries
# at most 64 MiB: the tarball is ~52 MB.
#
# usage: environment/device/pack-gpu.sh [DJL_SRC_TARBALL] [PREBUILT_JNI.so]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
JDK=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
DJL_SRC=${1:-$ROOT/../shared/gpu/djl-0.35.1-pytorch-native-src.tar.gz}
PREBUILT=${2:-$ROOT/../shared/gpu/libdjl_torch-2.11.0-cu130.so}
JUNIT_VERSION=$(sed -n 's#.*<junit.version>\(.*\)</junit.version>.*#\1#p' pom.xml | head -n 1)
CONSOLE=junit-platform-console-standalone-1.${JUNIT_VERSION#5.}.jar
OUT=$ROOT/.device
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$OUT"
for f in lib/cli/target/memfit-cli.jar lib/memfit/target/memfit-tests.jar lib/notebook/target/memfit-notebook-tests.jar \
        environment/kernel/target/memfit-kernel.jar \
        environment/kernel/target/lib/gson.jar "$DJL_SRC"; do
    [ -f "$f" ] || { echo "pack-gpu: missing $f (run ./memfit setup and ./mvnw -DskipTests package first)" >&2; exit 1; }
done

# 1. the JDK: the modules the CLI, the tests and JShell use; headers kept (gpu-setup compiles against jni.h)
"$JDK/bin/jlink" --add-modules java.base,java.compiler,java.desktop,java.logging,java.management,java.naming,java.net.http,java.prefs,java.scripting,java.sql,java.xml,jdk.compiler,jdk.jshell,jdk.unsupported,jdk.zipfs,jdk.internal.le,jdk.internal.opt,jdk.management \
    --strip-debug --no-man-pages --compress=zip-0 --strip-native-debug-symbols=objcopy=/usr/bin/objcopy \
    --output "$STAGE/.device/jdk"

# 2. the jars the CLI and the kernel load, as lib/cli/target/lib holds them, less what a GPU check never loads
mkdir -p "$STAGE/lib/cli/target/lib" "$STAGE/lib/memfit/target" "$STAGE/lib/notebook/target" "$STAGE/environment/kernel/target/lib" "$STAGE/.device/junit"
skip='^(pytorch-native-cpu|icu4j|pytorch-jni|s3proxy|opentelemetry|prometheus|protobuf-java|args4j|jimfs|jackson-(core|databind|dataformat-xml)-3|stax2-api|woodstox|sshd-|jetty-|jakarta\.|jcl-over-slf4j|memfit-bench)'
# the dependency list of this build, so that jars left in target/lib by earlier builds are not carried
mapfile -t wanted < <(./mvnw -o -q -B dependency:list -pl lib/cli -DincludeScope=runtime -DoutputFile=/dev/stdout \
    -DoutputAbsoluteArtifactFilename=true 2>/dev/null | sed -n 's#.*:\(/[^ ]*\.jar\).*#\1#p' | xargs -r -n1 basename)
[ ${#wanted[@]} -gt 20 ] || { echo "pack-gpu: could not list lib/cli's runtime jars" >&2; exit 1; }
for jar in "${wanted[@]}" memfit-bench-0.1.0-SNAPSHOT.jar; do
    [[ "$jar" =~ $skip ]] && [ "$jar" != memfit-bench-0.1.0-SNAPSHOT.jar ] && continue
    cp "lib/cli/target/lib/$jar" "$STAGE/lib/cli/target/lib/" 2>/dev/null || { echo "pack-gpu: no lib/cli/target/lib/$jar" >&2; exit 1; }
done
# native libraries of other platforms
for jar in "$STAGE"/lib/cli/target/lib/*.jar; do
    mapfile -t other < <(unzip -Z1 "$jar" | grep -E '\.(so|dylib|dll|jnilib|a)$' | grep -vE '([Ll]inux).*(amd64|x86_64|x86-64)|(amd64|x86_64|x86-64).*[Ll]inux' || true)
    [ ${#other[@]} -eq 0 ] || zip -q -d "$jar" "${other[@]}" >/dev/null
done
cp lib/cli/target/memfit-cli.jar "$STAGE/lib/cli/target/"
cp lib/memfit/target/memfit-tests.jar "$STAGE/lib/memfit/target/"
# the GPU tests that train on synthetic data (dev.memfit.train.Gpu*Test) are memfit-notebook's
cp lib/notebook/target/memfit-notebook-tests.jar "$STAGE/lib/notebook/target/"
cp environment/kernel/target/memfit-kernel.jar "$STAGE/environment/kernel/target/"
cp environment/kernel/target/lib/gson.jar "$STAGE/environment/kernel/target/lib/"
./mvnw -q -B dependency:copy -Dartifact="org.junit.platform:junit-platform-console-standalone:1.${JUNIT_VERSION#5.}" \
    -DoutputDirectory="$STAGE/.device/junit" >/dev/null
[ -f "$STAGE/.device/junit/$CONSOLE" ] || { echo "pack-gpu: could not fetch $CONSOLE from Maven Central" >&2; exit 1; }

# stored, not deflated: xz then compresses the classes across jars (the tarball is about half the size)
while IFS= read -r -d '' jar; do
    dir=$(mktemp -d)
    (cd "$dir" && unzip -q "$jar" && rm -f "$jar" && zip -q -0 -X -r "$jar" META-INF/MANIFEST.MF . 2>/dev/null || zip -q -0 -X -r "$jar" .)
    rm -rf "$dir"
done < <(find "$STAGE" -name '*.jar' -print0)
# fonts for the charts (GPU images often have neither fonts nor fontconfig): DejaVu and fontconfig with its libraries
mkdir -p "$STAGE/.device/fonts/lib"
for font in DejaVuSans.ttf DejaVuSans-Bold.ttf DejaVuSansMono.ttf; do
    cp /usr/share/fonts/truetype/dejavu/$font "$STAGE/.device/fonts/" || { echo "pack-gpu: no $font (apt-get install fonts-dejavu-core)" >&2; exit 1; }
done
for lib in libfontconfig.so.1 libfreetype.so.6 libexpat.so.1 libz.so.1 libpng16.so.16 libbrotlidec.so.1 libbrotlicommon.so.1; do
    cp -L "/usr/lib/x86_64-linux-gnu/$lib" "$STAGE/.device/fonts/lib/" || { echo "pack-gpu: no $lib" >&2; exit 1; }
done
(cd "$STAGE" && tar -cf - .device lib environment | xz -6 -T0 > "$OUT/gpu-carry.tar.xz.partial")
mv "$OUT/gpu-carry.tar.xz.partial" "$OUT/gpu-carry.tar.xz"
cp "$DJL_SRC" "$OUT/djl-src.tar.gz"
[ -f "$PREBUILT" ] && cp "$PREBUILT" "$OUT/$(basename "$PREBUILT")"
du -sh "$OUT"/*
