#!/usr/bin/env bash
# The install as a user sees it: `cmake --install BUILD --prefix TMP`, then
#  - the installed tree: the three tools, libvoxtral (shared with its soname, static), the
#    headers of include/voxtral/ and no other (none from src/; each compiles on its own),
#    voxtral.pc, the CMake package, the README; one version everywhere (project(): soname,
#    .pc, --version of each tool, voxtral_version(), the package version file);
#  - libvoxtral.so exports exactly the functions declared in include/voxtral/*.h, and links the
#    CUDA runtime and cuBLASLt when the build has the CUDA backend (not otherwise);
#  - consumer.c, a program outside the tree, built against the prefix with
#    `pkg-config --cflags --libs voxtral` (shared), with `pkg-config --static` (libvoxtral.a),
#    and with find_package(voxtral) (consumer/CMakeLists.txt: voxtral::voxtral and
#    voxtral::voxtral_static); each one loads the tiny fixture model (exported by the installed
#    voxtral_export) on the CPU and must transcribe short.wav to the golden ids of
#    tests/fixtures/tiny/reference/generation.json (the first build also through the queue, two
#    requests in one batch: the file, and its bytes in memory). With a GPU and the CUDA backend it also runs on "cuda".
# $1: build directory, $2: tests/fixtures. From tests/CMakeLists.txt, in the environment:
# VOX_CMAKE, VOX_CC, VOX_CONFIG, VOX_VERSION, VOX_SOVERSION, VOX_CUDA (ON/OFF), VOX_SHARED,
# VOX_STATIC (ON/OFF), VOX_LIBDIR, VOX_INCLUDEDIR, VOX_BINDIR, VOX_DOCDIR (install dirs) and
# VOX_CONSUMER_FLAGS (the sanitizer flags of a VOX_SANITIZE build: a consumer of instrumented
# code must link the same runtime). Exit 77: skipped.
set -u
BUILD=$1
FIXTURES=$2
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
CMAKE=${VOX_CMAKE:-cmake}
CC=${VOX_CC:-cc}
FLAGS=${VOX_CONSUMER_FLAGS:-}

skip() { echo "SKIPPED: $*"; exit 77; }
for v in VOX_VERSION VOX_SOVERSION VOX_LIBDIR VOX_INCLUDEDIR VOX_BINDIR VOX_DOCDIR; do
    [ -n "${!v:-}" ] || skip "$v not set (run through ctest)"
done
for d in "$VOX_LIBDIR" "$VOX_INCLUDEDIR" "$VOX_BINDIR" "$VOX_DOCDIR"; do
    case $d in /*) skip "install directory $d is absolute: cannot install into a temporary prefix" ;; esac
done
for tool in pkg-config nm readelf; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
[ -f "$BUILD/cmake_install.cmake" ] || skip "$BUILD has no install rules"

# One OpenMP thread: the tiny model gains nothing from more, and on a loaded machine (ctest -j,
# two cores) spinning OpenMP threads make each decode step wait for a core.
export OMP_NUM_THREADS=1
T0=$(date +%s.%N)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/vox_install_XXXXXX")
trap 'rm -rf "$TMP"' EXIT
P=$TMP/prefix
LIB=$P/$VOX_LIBDIR
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
step() { echo "-- [$(elapsed)s] $*"; }
# run NAME cmd...: runs cmd with its output in $TMP/NAME.log; fails (showing the log) if it fails
run() {
    local name=$1
    shift
    if ! "$@" >"$TMP/$name.log" 2>&1; then
        fail "$name: $* failed:"
        sed 's/^/    /' "$TMP/$name.log" | tail -40
        return 1
    fi
}
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# ---- install ------------------------------------------------------------------------------------
step "cmake --install $BUILD --prefix $P"
args=(--install "$BUILD" --prefix "$P")
[ -n "${VOX_CONFIG:-}" ] && args+=(--config "$VOX_CONFIG")
run install "$CMAKE" "${args[@]}" || exit 1

# ---- the installed tree -------------------------------------------------------------------------
step "installed files"
expect_file() { [ -f "$1" ] || fail "not installed: ${1#"$P"/}"; }
for t in voxtral_runner voxtral_export voxtral_tokenize; do
    expect_file "$P/$VOX_BINDIR/$t"
    out=$("$P/$VOX_BINDIR/$t" --version 2>&1)
    [ "$out" = "$t $VOX_VERSION" ] || fail "$t --version: '$out', want '$t $VOX_VERSION'"
done
expect_file "$P/$VOX_DOCDIR/README.md"
expect_file "$LIB/pkgconfig/voxtral.pc"
expect_file "$LIB/cmake/voxtral/voxtralConfig.cmake"
expect_file "$LIB/cmake/voxtral/voxtralConfigVersion.cmake"
expect_file "$LIB/cmake/voxtral/voxtralTargets.cmake"
SO=$LIB/libvoxtral.so
if [ "${VOX_SHARED:-OFF}" = ON ]; then
    expect_file "$SO.$VOX_VERSION"
    if [ "$(readlink "$SO")" != "libvoxtral.so.$VOX_SOVERSION" ] ||
       [ "$(readlink "$SO.$VOX_SOVERSION")" != "libvoxtral.so.$VOX_VERSION" ]; then
        fail "symlinks: libvoxtral.so -> $(readlink "$SO"), .so.$VOX_SOVERSION -> $(readlink "$SO.$VOX_SOVERSION")"
    fi
    soname=$(readelf -d "$SO.$VOX_VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [ "$soname" = "libvoxtral.so.$VOX_SOVERSION" ] || fail "soname '$soname', want libvoxtral.so.$VOX_SOVERSION"
else
    [ ! -e "$SO" ] || fail "libvoxtral.so installed by a build without the shared library"
fi
if [ "${VOX_STATIC:-OFF}" = ON ]; then
    expect_file "$LIB/libvoxtral.a"
else
    [ ! -e "$LIB/libvoxtral.a" ] || fail "libvoxtral.a installed by a build without it"
fi

# Headers: exactly include/voxtral/*.h, byte for byte, none of src/, each compiling on its own.
step "headers"
want_headers=$(cd "$SRC/include" && ls voxtral/*.h | sort)
got_headers=$(cd "$P" && find . -name '*.h' -o -name '*.hpp' -o -name '*.cuh' | sed 's|^\./||' | sort)
expected=$(for h in $want_headers; do echo "$VOX_INCLUDEDIR/$h"; done)
[ "$got_headers" = "$expected" ] || fail "installed headers:
$got_headers
want:
$expected"
while IFS= read -r -d '' f; do
    for h in $got_headers; do
        cmp -s "$f" "$P/$h" && fail "installed header $h is ${f#"$SRC"/}"
    done
done < <(find "$SRC/src" "$SRC/kernels" -name '*.h' -print0)
for h in $want_headers; do
    cmp -s "$SRC/include/$h" "$P/$VOX_INCLUDEDIR/$h" || fail "installed $h differs from include/$h"
    echo "#include <$h>" | "$CC" -std=c11 -Wall -Wextra -Werror -fsyntax-only -x c \
        -I"$P/$VOX_INCLUDEDIR" - >"$TMP/hdr.log" 2>&1 ||
        fail "$h does not compile alone with -I$VOX_INCLUDEDIR: $(cat "$TMP/hdr.log")"
done

# ---- libvoxtral.so: its exports and its dependencies ---------------------------------------------
if [ "${VOX_SHARED:-OFF}" = ON ]; then
    step "libvoxtral.so exports"
    # the functions the installed headers declare (preprocessed: no comments, no macro bodies)
    for h in $want_headers; do echo "#include <$h>"; done |
        "$CC" -E -P -I"$P/$VOX_INCLUDEDIR" -x c - >"$TMP/pp.c"
    grep -oE '\b(voxtral|vox)_[A-Za-z0-9_]+[[:space:]]*\(' "$TMP/pp.c" | sed 's/[[:space:](]*$//' |
        sort -u >"$TMP/declared"
    nm -D --defined-only "$SO" | awk '{print $NF}' | sort -u >"$TMP/exported"
    extra=$(comm -13 "$TMP/declared" "$TMP/exported" | tr '\n' ' ')
    missing=$(comm -23 "$TMP/declared" "$TMP/exported" | tr '\n' ' ')
    [ -z "$extra" ] || fail "libvoxtral.so exports what no public header declares: $extra"
    [ -z "$missing" ] || fail "libvoxtral.so does not export: $missing"
    echo "   $(wc -l <"$TMP/exported") symbols exported, the $(wc -l <"$TMP/declared") declared"
    deps=$(needed "$SO" | tr '\n' ' ')
    echo "   NEEDED: $deps"
    for d in libsndfile libmpg123 libsoxr libcjson libpcre2-8; do
        [[ " $deps" == *" $d.so"* ]] || fail "libvoxtral.so does not link $d: $deps"
    done
    if [ "${VOX_CUDA:-OFF}" = ON ]; then
        [[ " $deps" == *" libcudart.so"* ]] || fail "CUDA build: libvoxtral.so does not link libcudart: $deps"
        # cuBLASLt is loaded when the CUDA backend starts (its load costs 0.1 s): not linked
        [[ "$deps" != *libcublas* ]] || fail "CUDA build: libvoxtral.so links cuBLAS: $deps"
    else
        [[ "$deps" != *libcu* ]] || fail "CPU build: libvoxtral.so links CUDA: $deps"
    fi
fi

# ---- voxtral.pc -----------------------------------------------------------------------------------
export PKG_CONFIG_PATH=$LIB/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pcver=$(pkg-config --modversion voxtral 2>&1)
[ "$pcver" = "$VOX_VERSION" ] || fail "pkg-config --modversion voxtral: '$pcver', want $VOX_VERSION"
pccuda=$(pkg-config --variable=cuda voxtral)
[ "$pccuda" = "$([ "${VOX_CUDA:-OFF}" = ON ] && echo yes || echo no)" ] || fail "voxtral.pc cuda=$pccuda"

# ---- the model and the golden ids -----------------------------------------------------------------
MODEL=$TMP/model
AUDIO=$FIXTURES/tiny/audio/short.wav
GEN=$FIXTURES/tiny/reference/generation.json
step "installed voxtral_export: tiny model"
run export "$P/$VOX_BINDIR/voxtral_export" --from "$FIXTURES/tiny/checkpoint_hf" --out "$MODEL" || exit 1
# the first case of generation.json: short.wav, language detected, 24 tokens, no near-tie
grep -q '"cases":\[{"audio":"short.wav","language":null' "$GEN" || { fail "$GEN: first case is not short.wav"; exit 1; }
IDS=$(grep -o '"greedy":{"ids":\[[0-9,]*\]' "$GEN" | head -1 | sed 's/.*\[\(.*\)\]/\1/')
[ -n "$IDS" ] || { fail "no greedy ids in $GEN"; exit 1; }

# consume NAME BINARY DEVICE IDS [queue]: runs a consumer build
consume() {
    local name=$1 bin=$2
    shift 2
    if run "$name" "$bin" "$VOX_VERSION" "$MODEL" "$AUDIO" "$@"; then
        echo "   $name: $(head -1 "$TMP/$name.log")"
    fi
}
links_shared() { [[ " $(needed "$1" | tr '\n' ' ')" == *" libvoxtral.so.$VOX_SOVERSION "* ]]; }

# ---- pkg-config -------------------------------------------------------------------------------------
cflags=$(pkg-config --cflags voxtral)
if [ "${VOX_SHARED:-OFF}" = ON ]; then
    step "consumer: pkg-config --cflags --libs voxtral (shared)"
    # shellcheck disable=SC2046,SC2086
    if run cc_pc_shared "$CC" -std=c11 $FLAGS "$HERE/consumer.c" $(pkg-config --cflags --libs voxtral) \
           -Wl,-rpath,"$LIB" -o "$TMP/pc_shared"; then
        links_shared "$TMP/pc_shared" || fail "pc_shared does not load libvoxtral.so.$VOX_SOVERSION"
        consume pc_shared "$TMP/pc_shared" cpu "$IDS" queue
    fi
fi
if [ "${VOX_STATIC:-OFF}" = ON ]; then
    step "consumer: pkg-config --static --cflags --libs voxtral (libvoxtral.a)"
    # as README.md says: -l:libvoxtral.a takes the archive when both libraries are installed
    libs=$(pkg-config --static --libs voxtral | sed 's/-lvoxtral/-l:libvoxtral.a/')
    # shellcheck disable=SC2086
    if run cc_pc_static "$CC" -std=c11 $FLAGS "$HERE/consumer.c" $cflags $libs -o "$TMP/pc_static"; then
        links_shared "$TMP/pc_static" && fail "pc_static loads libvoxtral.so"
        consume pc_static "$TMP/pc_static" cpu "$IDS"
    fi
fi

# ---- find_package -------------------------------------------------------------------------------------
step "consumer: find_package(voxtral), voxtral::voxtral and voxtral::voxtral_static"
want_version=$(echo "$VOX_VERSION" | cut -d. -f1,2)
if run cmake_configure "$CMAKE" -S "$HERE/consumer" -B "$TMP/cmake-build" -DCMAKE_PREFIX_PATH="$P" \
       -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=Release -DVOX_WANT_VERSION="$want_version" \
       -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$FLAGS" &&
   run cmake_build "$CMAKE" --build "$TMP/cmake-build"; then
    bin=$TMP/cmake-build/consumer
    if [ "${VOX_SHARED:-OFF}" = ON ]; then
        links_shared "$bin" || fail "voxtral::voxtral is not the shared library"
    fi
    # the queue once per run: here when the pkg-config build did not run it
    q=()
    [ -x "$TMP/pc_shared" ] || q=(queue)
    consume cmake "$bin" cpu "$IDS" "${q[@]}"
    if [ "${VOX_STATIC:-OFF}" = ON ]; then
        if [ -x "$TMP/cmake-build/consumer_static" ]; then
            links_shared "$TMP/cmake-build/consumer_static" && fail "voxtral::voxtral_static loads libvoxtral.so"
            consume cmake_static "$TMP/cmake-build/consumer_static" cpu "$IDS"
        else
            fail "find_package(voxtral) gave no voxtral::voxtral_static"
        fi
    fi
fi
# a version the package must refuse: the next minor (0.x) or major release
next=$(echo "$VOX_VERSION" | awk -F. '$1 == 0 {print "0." $2 + 1; next} {print $1 + 1 ".0"}')
if "$CMAKE" -S "$HERE/consumer" -B "$TMP/cmake-next" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" \
       -DVOX_WANT_VERSION="$next" >"$TMP/cmake_next.log" 2>&1; then
    fail "find_package(voxtral $next) accepted version $VOX_VERSION"
fi

# ---- the CUDA backend, where there is a GPU ----------------------------------------------------------
if [ "${VOX_CUDA:-OFF}" = ON ] && [ -x "$TMP/pc_shared" ] && command -v nvidia-smi >/dev/null 2>&1 &&
   nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    step "consumer on cuda"
    consume pc_shared_cuda "$TMP/pc_shared" cuda - queue
else
    echo "-- (no GPU or no CUDA backend: the consumers ran on the CPU only)"
fi

secs=$(elapsed)
if [ "$failures" -ne 0 ]; then
    echo "$failures failures"
    exit 1
fi
echo "install test passed (${secs}s)"
