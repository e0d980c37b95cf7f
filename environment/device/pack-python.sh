#!/usr/bin/env bash
# Packs this machine's Debian bookworm Python 3.11 with just what environment/run_notebooks.py needs (nbclient,
# nbconvert's HTMLExporter and its classic/lab templates, jupyter_client, pyzmq with libzmq ...) into a relocatable
# bundle, for a machine that has no Debian python3.11, no Jupyter and no zmq (an Ubuntu 24.04-like x86-64 Linux,
# glibc >= 2.36).
#
# usage: environment/device/pack-python.sh [OUTPUT.tar.xz]      (default: .device/py311.tar.xz)
#
# The archive unpacks to one folder, py311/; run its launcher from wherever it was unpacked:
#     tar -xJf py311.tar.xz -C /some/dir
#     /some/dir/py311/bin/python environment/run_notebooks.py --small ...
# bin/python sets PYTHONHOME, PYTHONPATH, LD_LIBRARY_PATH (the carried shared libraries in lib/native) and
# PYTHONNOUSERSITE=1, then execs the carried bin/python3.11; sys.path holds only the bundle, never the host's
# site-packages or /usr/lib/python3/dist-packages. The bundle's sitecustomize.py gives child processes (the Java
# kernel) the environment the launcher was called with, so they do not load the bundle's libraries.
#
# Needs: Debian 12 with python3.11, python3-nbclient, python3-nbconvert, python3-zmq (./memfit setup installs them),
# xz, and gcc for the libicudata stub (see ICU below; without gcc the real 31 MB ICU data is carried).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-$ROOT/.device/py311.tar.xz}"
PY=/usr/bin/python3.11
STDLIB=/usr/lib/python3.11
DIST=/usr/lib/python3/dist-packages
TEMPLATES=/usr/share/jupyter/nbconvert/templates

for need in "$PY" "$STDLIB/os.py" "$DIST/nbclient" "$DIST/nbconvert" "$DIST/zmq" "$TEMPLATES/classic"; do
  [ -e "$need" ] || { echo "pack-python: $need is missing (Debian's python3.11, python3-nbclient, python3-nbconvert, python3-zmq)" >&2; exit 1; }
done

STAGE="$(mktemp -d "${TMPDIR:-/tmp}/pack-python.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
B="$STAGE/py311"
mkdir -p "$B/bin" "$B/lib/python3.11" "$B/lib/python3/dist-packages" "$B/lib/native" "$B/share/jupyter/nbconvert/templates"

# --- the interpreter (Debian links libpython statically into it) ---------------------------------------------------
cp -L "$PY" "$B/bin/python3.11"

# --- the standard library, without tests, GUI, build and packaging parts ------------------------------------------
tar -C "$STDLIB" -cf - \
    --exclude=__pycache__ --exclude='*.pyc' \
    --exclude=./test --exclude=./idlelib --exclude=./tkinter --exclude=./turtledemo --exclude=./turtle.py \
    --exclude=./ensurepip --exclude=./lib2to3 --exclude=./distutils --exclude=./venv --exclude=./pydoc_data \
    --exclude='./config-3.11-*' --exclude=./dist-packages --exclude=./site-packages \
    --exclude=./sitecustomize.py --exclude=./EXTERNALLY-MANAGED \
    --exclude='./lib-dynload/_test*' --exclude='./lib-dynload/_ctypes_test*' --exclude='./lib-dynload/xxlimited*' \
    --exclude='./lib-dynload/_xx*' --exclude='./lib-dynload/_tkinter*' --exclude='./lib-dynload/_dbm*' \
    --exclude='./lib-dynload/_gdbm*' --exclude='./lib-dynload/nis.*' --exclude='./lib-dynload/ossaudiodev*' \
    --exclude='./lib-dynload/_crypt*' --exclude='./lib-dynload/_curses*' --exclude=./curses \
    --exclude='./lib-dynload/readline*' --exclude='./lib-dynload/_sqlite3*' --exclude=./sqlite3 --exclude=./_pydecimal.py \
    . | tar -C "$B/lib/python3.11" -xf -

# Child processes (the kernel: launch.sh, java) get the environment the launcher was called with: the bundle's
# LD_LIBRARY_PATH must not reach java (its own native libraries, PyTorch's, want the host's libstdc++), nor its
# PYTHONHOME a host python. The dynamic loader and the interpreter read these variables at start only.
cat > "$B/lib/python3.11/sitecustomize.py" <<'EOF'
"""py311 bundle: restores, for child processes, the variables bin/python set (it saved them as PY311_ORIG_*)."""
import os

for _name in ("PYTHONHOME", "PYTHONPATH", "LD_LIBRARY_PATH", "PYTHONNOUSERSITE"):
    _saved = os.environ.pop("PY311_ORIG_" + _name, None)
    if _saved is None or os.environ.get("PY311_KEEP_ENV") == "1":
        continue
    if _saved == "__py311_unset__":
        os.environ.pop(_name, None)
    else:
        os.environ[_name] = _saved
del _name, _saved
EOF

# --- the dist-packages run_notebooks.py imports (traced from a real run), with their metadata ---------------------
# IPython (and jedi, prompt_toolkit ...) and notebook are optional imports of jupyter_client/nbconvert that change
# nothing for a Java kernel's notebook rendered with the classic template; they are left out.
TOP="nbclient nbconvert nbformat jupyter_client jupyter_core traitlets zmq tornado nest_asyncio entrypoints
  dateutil six jinja2 markupsafe pygments jupyterlab_pygments lxml bs4 soupsieve html5lib webencodings bleach
  tinycss2 defusedxml pandocfilters fastjsonschema jsonschema pyrsistent _pyrsistent_version pvectorc attr attrs
  ipython_genutils packaging"
"$PY" -I - "$DIST" "$B/lib/python3/dist-packages" $TOP <<'EOF'
import importlib.metadata as md, os, shutil, sys
src, dst, tops = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, src)
skip_dirs = {"__pycache__", "tests", "test", "includes"}
skip_ext = (".pyc", ".pyx", ".pxd", ".pxi", ".c", ".h")
# lxml.objectify and lxml.html.diff: nothing here imports them
skip_so = ("objectify.cpython", "diff.cpython")
def ignore(folder, names):
    return [n for n in names if n in skip_dirs or n.endswith(skip_ext) or n.startswith(skip_so)]
owners = md.packages_distributions()
dists = set()
for top in tops:
    found = [n for n in os.listdir(src) if n == top or n == top + ".py" or (n.startswith(top + ".") and n.endswith(".so"))]
    if not found:
        sys.exit(f"pack-python: {top} is not in {src}")
    for name in found:
        path = os.path.join(src, name)
        if os.path.isdir(path):
            shutil.copytree(path, os.path.join(dst, name), ignore=ignore)
        else:
            shutil.copy2(path, dst)
    names = owners.get(top) or [n.split("-")[0] for n in os.listdir(src)
                                 if n.lower().startswith(top.lower() + "-") and n.endswith(("-info"))]
    if not names and not top.startswith("_") and top != "pvectorc":
        print(f"  (no distribution metadata for {top})")
    dists.update(names)
for dist in sorted(dists):
    meta = md.distribution(dist)
    folder = str(meta._path)
    if os.path.dirname(folder) == src:
        if os.path.isdir(folder):
            shutil.copytree(folder, os.path.join(dst, os.path.basename(folder)))
        else:
            shutil.copy2(folder, dst)
    print(f"  {dist} {meta.version}")
EOF

# nbconvert's templates: jupyter_core finds them under sys.prefix/share/jupyter (the bundle's root).
for t in base classic lab; do cp -rL "$TEMPLATES/$t" "$B/share/jupyter/nbconvert/templates/"; done

# ICU: Debian's libxml2 (lxml) links libicuuc (2 MB, plus its 31 MB libicudata) only to convert encodings that
# neither libxml2 itself nor glibc's iconv (tried first) knows. Unless PACK_REAL_ICU=1, a stub libicuuc stands in:
# its ucnv_open fails, so such an encoding is reported as unsupported (lxml: LookupError/XMLSyntaxError) instead of
# converted. UTF-8/16/32, Latin-1 and everything glibc's iconv knows are unaffected.
xml2="$(ldd "$DIST"/lxml/etree.*.so | awk '$1 == "libxml2.so.2" {print $3}')"
icu="$(objdump -p "$xml2" | awk '$1 == "NEEDED" && $2 ~ /^libicuuc\.so\./ {print $2}')"
if [ -n "$icu" ] && [ "${PACK_REAL_ICU:-0}" != 1 ]; then
  v="${icu##*.}"
  cat > "$STAGE/icuuc.c" <<STUB
/* stub $icu for the py311 bundle: no ICU converters (libxml2 falls back to its own and iconv's) */
typedef struct UConverter UConverter;
UConverter *ucnv_open_$v(const char *name, int *err) { (void) name; if (err) *err = 4 /* U_FILE_ACCESS_ERROR */; return 0; }
void ucnv_close_$v(UConverter *c) { (void) c; }
void ucnv_convertEx_$v(void) {}
void ucnv_setFromUCallBack_$v(void) {}
void ucnv_setToUCallBack_$v(void) {}
void UCNV_TO_U_CALLBACK_STOP_$v(void) {}
void UCNV_FROM_U_CALLBACK_STOP_$v(void) {}
STUB
  gcc -shared -fPIC -O2 -Wl,-soname,"$icu" -o "$B/lib/native/$icu" "$STAGE/icuuc.c"
  for sym in $(objdump -T "$xml2" | awk '/\*UND\*/ && $NF ~ /_'"$v"'$/ {print $NF}'); do
    objdump -T "$B/lib/native/$icu" | grep -qw "$sym" \
      || { echo "pack-python: the ICU stub lacks $sym (PACK_REAL_ICU=1 carries the real ICU)" >&2; exit 1; }
  done
fi

# --- the shared libraries the binary and every extension module need (glibc itself stays the host's) -------------
# ldd closure, iterated: a carried library can need more.
glibc='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libnss_[a-z]+)\.so'
# libzmq (C++) needs libstdc++ and libgcc_s; every Ubuntu/Debian base image has them, newer (apt links them):
# PACK_LIBSTDCXX=0 leaves them to the host.
[ "${PACK_LIBSTDCXX:-1}" = 1 ] || glibc='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libnss_[a-z]+|libstdc\+\+|libgcc_s)\.so'
while :; do
  added=0
  while read -r lib path; do
    [ -e "$B/lib/native/$lib" ] && continue
    cp -L "$path" "$B/lib/native/$lib"; added=1
  done < <(find "$B" -type f \( -name '*.so' -o -name '*.so.*' -o -name python3.11 \) -print0 \
             | LD_LIBRARY_PATH="$B/lib/native" xargs -0 ldd 2>/dev/null \
             | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | grep -Ev "$glibc" || true)
  [ "$added" = 1 ] || break
done

strip --strip-unneeded "$B/lib/native/"* 2>/dev/null || true

# --- the launcher ------------------------------------------------------------------------------------------------
cat > "$B/bin/python" <<'EOF'
#!/bin/sh
# py311 bundle launcher: Debian bookworm's python3.11 with the packages environment/run_notebooks.py needs.
# Works from any folder the bundle is unpacked to; the host's site-packages are never on sys.path.
here=$(cd "$(dirname "$0")/.." && pwd -P)
for v in PYTHONHOME PYTHONPATH LD_LIBRARY_PATH PYTHONNOUSERSITE; do
  eval "if [ -n \"\${$v+set}\" ]; then export PY311_ORIG_$v=\"\$$v\"; else export PY311_ORIG_$v=__py311_unset__; fi"
done
export PYTHONHOME="$here"
export PYTHONPATH="$here/lib/python3/dist-packages"
export LD_LIBRARY_PATH="$here/lib/native"
export PYTHONNOUSERSITE=1
unset PYTHONSTARTUP PYTHONEXECUTABLE PYTHONPLATLIBDIR PYTHONSAFEPATH
exec "$here/bin/python3.11" "$@"
EOF
chmod 755 "$B/bin/python" "$B/bin/python3.11"
ln -s python "$B/bin/python3"

{
  echo "py311 bundle, packed $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "python: $("$PY" -c 'import sys; print(sys.version.split()[0])') ($(dpkg-query -W -f='${Version}' python3.11 2>/dev/null || true))"
  echo "launcher: py311/bin/python (sets PYTHONHOME, PYTHONPATH, LD_LIBRARY_PATH=lib/native, PYTHONNOUSERSITE=1)"
  echo "native libraries (lib/native):"; (cd "$B/lib/native" && ls -1 | sed 's/^/  /')
  echo "dist-packages:"; (cd "$B/lib/python3/dist-packages" && ls -1 | grep -E '\.(dist|egg)-info$' | sed 's/^/  /')
} > "$B/BUNDLE.txt"

mkdir -p "$(dirname "$OUT")"
tar -C "$STAGE" --sort=name --owner=0 --group=0 --numeric-owner -cf - py311 | xz -T1 -9 > "$OUT.partial"
mv "$OUT.partial" "$OUT"
echo "pack-python: $OUT ($(du -h "$OUT" | cut -f1), $(du -sh "$B" | cut -f1) unpacked)"
