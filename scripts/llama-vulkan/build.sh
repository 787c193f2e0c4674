#!/usr/bin/env bash
# Build the pinned, patched llama.cpp (patches/llama.cpp) for x86_64 with
# ggml's Vulkan backend, once, cached:
#
#   scripts/llama-vulkan/build.sh [--cache DIR] [--only-bench]
#
# stdout: the path of the built llama-bench (one line, nothing else), so
#   RVL_LLAMA_BENCH="$(scripts/llama-vulkan/build.sh --cache DIR)"
# works; progress goes to stderr. Beside it, unless --only-bench: llama-server,
# test-backend-ops (the correctness gate and the subgroup-16 tests) and
# ggml-rpc-server (llama.cpp's RPC worker, -DGGML_RPC=ON). Default cache: $LLAMA_VK_CACHE, else .cache/llama-vulkan in
# the repository (ignored by git).
#
# Steps (each skipped when its result is already in the cache):
#  1. the sdist named in PIN.yaml, downloaded with pip into a private venv,
#     checked against PIN.yaml's size and sha256;
#  2. Vulkan + SPIRV headers from Debian sid's libvulkan-dev and
#     spirv-headers debs (Debian 12's are too old for ggml-vulkan), and sid's
#     glslc (Debian 12's 2023.2 lacks GL_EXT_integer_dot_product, so ggml would
#     build no int-dot shaders) with the C/C++ runtime it needs, run through
#     that runtime's own loader (CACHE/toolchain/bin/glslc); fetched with apt
#     under a PRIVATE configuration in CACHE/apt and unpacked with dpkg-deb;
#     /etc/apt is only read (for the mirror URL), never written;
#  3. the tree, extracted and patched with the series, in a directory named
#     by the build key = sha256 of PIN.yaml + series + every patch + this
#     script's cmake flags, so a changed patch gets a new tree and build;
#  4. cmake + ninja, Release, -DGGML_VULKAN=ON -DBUILD_SHARED_LIBS=OFF
#     -DGGML_NATIVE=OFF. A finished build writes CACHE/KEY/ready; with it, a
#     re-run prints the path in well under a second.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
pdir="$repo/patches/llama.cpp"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

say() { printf 'llama-vulkan: %s\n' "$*" >&2; }
die() {
    say "error: $*"
    exit 1
}
need_cmd() { command -v "$1" >/dev/null 2>&1 || die "missing host tool '$1' (apt-get install $2)"; }

cache="${LLAMA_VK_CACHE:-$repo/.cache/llama-vulkan}"
targets=(llama-bench llama-server test-backend-ops ggml-rpc-server)
while [ $# -gt 0 ]; do
    case "$1" in
        --cache)
            [ $# -ge 2 ] || die "--cache needs a directory"
            cache="$2"
            shift 2
            ;;
        --only-bench)
            targets=(llama-bench)
            shift
            ;;
        -h | --help)
            sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
            exit 0
            ;;
        *) die "unknown argument '$1' (usage: build.sh [--cache DIR] [--only-bench])" ;;
    esac
done
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"

# --- PIN.yaml: the three fields this script needs (flat `key: value` lines) ---
pin() { sed -n "s/^ *$1: *\([^ #]*\).*/\1/p" "$pdir/PIN.yaml" | head -n 1; }
filename="$(pin filename)"
size="$(pin size)"
sha="$(pin sha256)"
package="$(pin package)"
version="$(pin version)"
tree_rel="$(pin tree)"
for v in filename size sha package version tree_rel; do
    [ -n "${!v}" ] || die "patches/llama.cpp/PIN.yaml lacks '$v'"
done

cmake_flags=(-DCMAKE_BUILD_TYPE=Release -DGGML_VULKAN=ON -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF
    -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_RPC=ON
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON)
key="$({
    cat "$pdir/PIN.yaml" "$pdir/series"
    while IFS= read -r p || [ -n "$p" ]; do
        [ -n "$p" ] && cat "$pdir/$p"
    done <"$pdir/series"
    printf '%s\n' "${cmake_flags[@]}"
    # the shader compiler: sid's glslc (step 2), not the host's
    echo "glslc: sid"
} | sha256sum | cut -c1-16)"
kdir="$cache/$key"
bench="$kdir/build/bin/llama-bench"

have_all() {
    [ -f "$kdir/ready" ] || return 1
    local t
    for t in "${targets[@]}"; do [ -x "$kdir/build/bin/$t" ] || return 1; done
}
if have_all; then
    say "cached build $key ($(cat "$kdir/ready"))"
    printf '%s\n' "$bench"
    exit 0
fi

t0=$(date +%s)
need_cmd cmake cmake
need_cmd ninja ninja-build
need_cmd g++ g++
need_cmd patch patch
need_cmd apt-get apt
need_cmd dpkg-deb dpkg
need_cmd python3 python3
[ -r "$KEYRING" ] || die "missing $KEYRING (apt-get install debian-archive-keyring)"
loader=/usr/lib/x86_64-linux-gnu/libvulkan.so.1
[ -e "$loader" ] || die "missing $loader (apt-get install libvulkan1)"

# --- 1. the sdist ---
sdist="$cache/src/$filename"
if [ ! -f "$sdist" ] || [ "$(stat -c %s "$sdist")" != "$size" ]; then
    say "1/4 downloading $package==$version (sdist, $((size / 1000000)) MB) with pip"
    venv="$cache/venv"
    # scikit-build-core: pip prepares the sdist's metadata with it
    # (--no-build-isolation, else pip hangs installing build dependencies).
    [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" >&2 || die "python3 -m venv failed (apt-get install python3-venv)"
    "$venv/bin/pip" -q install scikit-build-core >&2 || die "pip install scikit-build-core failed"
    mkdir -p "$cache/src"
    "$venv/bin/pip" -q download --no-deps --no-binary :all: --no-build-isolation \
        "$package==$version" -d "$cache/src" >&2 || die "pip download $package==$version failed"
    [ -f "$sdist" ] || die "pip did not save $sdist"
fi
[ "$(stat -c %s "$sdist")" = "$size" ] || die "$sdist: size $(stat -c %s "$sdist"), PIN.yaml says $size"
got="$(sha256sum "$sdist" | cut -d' ' -f1)"
[ "$got" = "$sha" ] || die "$sdist: sha256 $got, PIN.yaml says $sha"
say "1/4 sdist ok: $filename (sha256 matches PIN.yaml)"

# --- 2. Vulkan + SPIRV headers and glslc from Debian sid ---
hdr="$cache/toolchain"
# the debs: headers, and glslc with the runtime it links (its libshaderc1 holds glslang and
# SPIRV-Tools); sid's libc6 and libstdc++6 are newer than Debian 12's, so glslc runs through
# the unpacked libc6's loader with --library-path, never the host's
debs=(libvulkan-dev spirv-headers glslc libshaderc1 libc6 libgcc-s1 libstdc++6)
if [ ! -f "$hdr/.ready" ]; then
    say "2/4 fetching ${debs[*]} from Debian sid (private apt config)"
    mirror="${LLAMA_VK_MIRROR:-$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        grep -oE '(https?|file)://[^ ]*/debian/?( |$)' | tr -d ' ' | sed 's:/$::' | head -n 1 || true)}"
    [ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list*; set LLAMA_VK_MIRROR=URL"
    aptd="$cache/apt"
    mkdir -p "$aptd/etc" "$aptd/lists/partial" "$aptd/archives/partial" "$aptd/debs"
    [ -f "$aptd/status" ] || : >"$aptd/status"
    printf 'deb [signed-by=%s] %s sid main\n' "$KEYRING" "$mirror" >"$aptd/etc/sources.list"
    cat >"$aptd/etc/apt.conf" <<CONF
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
APT::Sandbox::User "root";
Dir::Etc::SourceList "$aptd/etc/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "/dev/null";
Dir::State "$aptd";
Dir::State::Lists "$aptd/lists";
Dir::State::status "$aptd/status";
Dir::Cache "$aptd";
Dir::Cache::Archives "$aptd/archives";
Debug::NoLocking "true";
CONF
    export APT_CONFIG="$aptd/etc/apt.conf"
    apt-get -q update >"$aptd/update.log" 2>&1 || {
        tail -n 20 "$aptd/update.log" >&2
        die "apt-get update (sid) failed (log: $aptd/update.log)"
    }
    rm -f "$aptd/debs/"*.deb
    (cd "$aptd/debs" && apt-get -q download "${debs[@]}") >"$aptd/download.log" 2>&1 || {
        tail -n 20 "$aptd/download.log" >&2
        die "apt-get download failed (log: $aptd/download.log)"
    }
    unset APT_CONFIG
    rm -rf "$hdr.tmp"
    mkdir -p "$hdr.tmp"
    for d in "$aptd/debs/"*.deb; do
        dpkg-deb -x "$d" "$hdr.tmp"
        printf '%s %s\n' "$(basename "$d")" "$(sha256sum "$d" | cut -d' ' -f1)" >>"$hdr.tmp/.debs"
    done
    [ -f "$hdr.tmp/usr/include/vulkan/vulkan.hpp" ] || die "no vulkan.hpp in the sid libvulkan-dev deb"
    [ -d "$hdr.tmp/usr/share/cmake/SPIRV-Headers" ] || die "no SPIRV-Headers cmake config in the sid spirv-headers deb"
    lib="$hdr.tmp/usr/lib/x86_64-linux-gnu"
    [ -x "$hdr.tmp/usr/bin/glslc" ] && [ -e "$lib/ld-linux-x86-64.so.2" ] || die "no glslc or loader in the sid glslc/libc6 debs"
    mkdir -p "$hdr.tmp/bin"
    # the final directory's paths: the wrapper is written before the rename below
    cat >"$hdr.tmp/bin/glslc" <<WRAP
#!/bin/sh
# sid's glslc through sid's loader and libraries (written by scripts/llama-vulkan/build.sh)
exec "$hdr/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$hdr/usr/lib/x86_64-linux-gnu" "$hdr/usr/bin/glslc" "\$@"
WRAP
    chmod +x "$hdr.tmp/bin/glslc"
    mv "$hdr.tmp/.debs" "$hdr.tmp/.ready"
    rm -rf "$hdr"
    mv "$hdr.tmp" "$hdr"
fi
glslc="$hdr/bin/glslc"
"$glslc" --version >/dev/null 2>&1 || die "$glslc does not run (remove $hdr to fetch it again)"
say "2/4 headers and glslc ok: $(cut -d' ' -f1 "$hdr/.ready" | tr '\n' ' ')"

# --- 3. the patched tree ---
src="$kdir/src"
if [ ! -f "$src/.patched" ]; then
    say "3/4 extracting $tree_rel and applying $(grep -c . "$pdir/series") patches"
    rm -rf "$kdir/src.tmp"
    mkdir -p "$kdir/src.tmp"
    tar -xzf "$sdist" -C "$kdir/src.tmp" "$tree_rel"
    t="$kdir/src.tmp/$tree_rel"
    [ -f "$t/ggml/src/ggml-vulkan/ggml-vulkan.cpp" ] || die "$tree_rel in $filename is not a llama.cpp tree"
    # The vendored tree's .git file points at the sdist's own git modules
    # directory, which is not there; cmake's build-info step would trip on it.
    rm -f "$t/.git"
    while IFS= read -r p || [ -n "$p" ]; do
        [ -z "$p" ] && continue
        patch -d "$t" -p1 --forward --batch --quiet <"$pdir/$p" >&2 || die "$p does not apply to $tree_rel"
        say "    applied $p"
    done <"$pdir/series"
    rm -rf "$src"
    mv "$t" "$src"
    rm -rf "$kdir/src.tmp"
    : >"$src/.patched"
fi

# --- 4. build ---
# llama.cpp stamps its binaries with `git rev-parse HEAD` of the source dir;
# the tree has no git of its own, and git must not find the enclosing
# repository (rvl's, when the cache is under it) and report rvl's commit as
# llama.cpp's build_commit. Stopped at the key dir, git finds none: "unknown".
export GIT_CEILING_DIRECTORIES="$kdir"
say "4/4 building ${targets[*]} (Release, Vulkan, static; ggml's shader generation dominates)"
cmake -S "$src" -B "$kdir/build" -G Ninja "${cmake_flags[@]}" \
    -DVulkan_INCLUDE_DIR="$hdr/usr/include" -DVulkan_LIBRARY="$loader" \
    -DSPIRV-Headers_DIR="$hdr/usr/share/cmake/SPIRV-Headers" -DVulkan_GLSLC_EXECUTABLE="$glslc" >"$kdir/configure.log" 2>&1 || {
    tail -n 30 "$kdir/configure.log" >&2
    die "cmake configure failed (log: $kdir/configure.log)"
}
# ninja's own progress lines ([n/N] ...) go to stderr, one a line.
cmake --build "$kdir/build" --target "${targets[@]}" -j "${JOBS:-$(nproc)}" >&2 ||
    die "build failed (rerun to resume; it continues where it stopped)"
for t in "${targets[@]}"; do [ -x "$kdir/build/bin/$t" ] || die "no $kdir/build/bin/$t after the build"; done
secs=$(($(date +%s) - t0))
mins="$((secs / 60)) min $((secs % 60)) s"
printf '%s built in %s: %s\n' "$(date -u +%FT%TZ)" "$mins" "${targets[*]}" >"$kdir/ready"
say "done in $mins; cache $cache is $(du -sh "$cache" | cut -f1) ($(du -sh "$kdir/build" | cut -f1) build)"
printf '%s\n' "$bench"
