#!/usr/bin/env bash
# Build rvl's patched panvk on a PC for boards with little disk or time, as an archive
# `rvl setup --mesa-from prebuilt --mesa-archive FILE` installs (it checks FILE.sha256 and the
# archive's own build stamp).
#
#   scripts/build-panvk-deb.sh --arm64 --tarball mesa-26.2.4.tar.xz [--out DIR] [--work DIR] [--jobs N]
#
# Runs on Debian 12 (bookworm) x86_64, as root (it installs the cross compilers and the build
# packages with apt-get); a bookworm chroot does (scripts/panvk-lab/bookworm-setup.sh makes one,
# with rvl's build tools already in /opt/rvl/build). The driver is linked against bookworm's
# glibc 2.36, so it loads on Debian 12 and newer and on Ubuntu 22.04 and newer.
#
# Two builds of the same patched tree:
#   1. native: mesa_clc, vtn_bindgen2 and panfrost_compile (the build-time compilers of the CL
#      kernels), with the release's LLVM 15/libclc/LLVMSPIRVLib and SPIRV-Tools >= 2024.1
#      (/opt/rvl/build/spirv-tools-*, made by `rvl setup`, or SPIRV_TOOLS_PC=DIR);
#   2. cross (aarch64): libvulkan_panfrost.so with -Dmesa-clc=system -Dprecomp-compiler=system
#      -Dllvm=disabled, against an arm64 sysroot of bookworm's libdrm, expat, zlib, zstd and
#      libelf dev packages (downloaded with a private apt configuration; /etc/apt untouched).
# Output: DIR/panvk-VERSION-rvl1-aarch64.tar.xz (the prefix's lib/ and share/, with
# share/rvl/build.json naming the Mesa version, source sha256 and patches, as rvl's own build
# does) and its .sha256.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
die() { printf 'build-panvk-deb: %s\n' "$*" >&2; exit 1; }

arch=""
tarball=""
out="$PWD"
work="${TMPDIR:-/var/tmp}/rvl-panvk-cross"
jobs="${JOBS:-2}"
while [ $# -gt 0 ]; do
    case "$1" in
        --arm64) arch=arm64; shift ;;
        --tarball) tarball="$(realpath "$2")"; shift 2 ;;
        --out) out="$(realpath "$2")"; shift 2 ;;
        --work) work="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        *) die "usage: build-panvk-deb.sh --arm64 --tarball FILE [--out DIR] [--work DIR] [--jobs N]" ;;
    esac
done
[ "$arch" = arm64 ] || die "only --arm64 is supported"
[ -f "$tarball" ] || die "--tarball FILE: the pinned Mesa release tarball (firmware-manifest/manifest.yaml)"
[ "$(id -u)" = 0 ] || die "needs root (apt-get install of the cross compilers)"
. /etc/os-release
[ "${VERSION_ID:-}" = 12 ] || printf 'build-panvk-deb: warning: not Debian 12 (%s): the driver needs the glibc it is built against\n' "${PRETTY_NAME:-?}" >&2

version=$(sed -n '/^  - id: mesa$/,/^  - id:/s/^    version: "\(.*\)"/\1/p' "$repo/firmware-manifest/manifest.yaml" | head -n 1)
tree=$(sed -n '/^  - id: mesa$/,/^  - id:/s/^    tree: //p' "$repo/firmware-manifest/manifest.yaml" | head -n 1)
[ -n "$version" ] && [ -n "$tree" ] || die "cannot read the mesa pin from firmware-manifest/manifest.yaml"
prefix="/opt/rvl/mesa-$version-rvl1"
t0=$(date +%s)
step() { printf '[build-panvk-deb +%ds] %s\n' "$(($(date +%s) - t0))" "$*"; }
LOW=(nice -n 19 ionice -c3)
mkdir -p "$work" "$out"

# ---- packages: the release's build set (as rvl's mesa step installs it) + cross compilers
step "apt-get install: build packages and the aarch64 cross compilers"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    python3 python3-mako python3-yaml python3-packaging python3-venv ninja-build gcc g++ pkg-config patch \
    bison flex glslang-tools libdrm-dev libexpat1-dev zlib1g-dev libzstd-dev libelf-dev \
    llvm-15-dev libclang-cpp15-dev libclang-15-dev libclc-15-dev libllvmspirvlib-15-dev \
    gcc-aarch64-linux-gnu g++-aarch64-linux-gnu dpkg-dev xz-utils >"$work/apt.log" 2>&1 ||
    { tail -n 20 "$work/apt.log" >&2; die "apt-get install failed (log: $work/apt.log)"; }
meson="${MESON:-$(ls -d /opt/rvl/build/meson-*/bin/meson 2>/dev/null | head -n 1)}"
[ -x "$meson" ] || die "no meson >= 1.4: run rvl setup --only mesa once (it makes /opt/rvl/build/meson-*), or set MESON"
spv="${SPIRV_TOOLS_PC:-$(ls -d /opt/rvl/build/spirv-tools-*/lib/pkgconfig 2>/dev/null | head -n 1)}"
[ -d "$spv" ] || die "no SPIRV-Tools >= 2024.1: run rvl setup --only mesa once, or set SPIRV_TOOLS_PC"

# ---- the patched tree (rvl's series, in its order)
src="$work/src"
if [ ! -f "$src/.rvl-patched" ]; then
    step "unpacking $tarball and applying patches/mesa"
    rm -rf "$src" && mkdir -p "$src"
    tar -xf "$tarball" -C "$src"
    [ -d "$src/$tree" ] || die "$tarball has no $tree/"
    while IFS= read -r p || [ -n "$p" ]; do
        case "$p" in '' | '#'*) continue ;; esac
        patch -d "$src/$tree" -p1 <"$repo/patches/mesa/$p" >/dev/null || die "$p does not apply"
    done <"$repo/patches/mesa/series"
    touch "$src/.rvl-patched"
fi
S="$src/$tree"
common=(-Dvulkan-drivers=panfrost -Dgallium-drivers= -Dplatforms= -Dglx=disabled -Degl=disabled -Dgbm=disabled
    -Dgles1=disabled -Dgles2=disabled -Dopengl=false -Dvalgrind=disabled -Dlibunwind=disabled -Dvideo-codecs=
    --buildtype=release --wrap-mode=nodownload)

# ---- 1. native build-time compilers
nat="$work/native"
tools="$work/tools"
if [ ! -x "$tools/panfrost_compile" ]; then
    step "native: mesa_clc, vtn_bindgen2, panfrost_compile (log: $work/native.log)"
    printf "[binaries]\nllvm-config = '/usr/bin/llvm-config-15'\n" >"$work/native.ini"
    [ -f "$nat/build.ninja" ] || PKG_CONFIG_PATH="$spv" "${LOW[@]}" "$meson" setup "$nat" "$S" --native-file="$work/native.ini" \
        "${common[@]}" -Dllvm=enabled -Dmesa-clc=enabled -Dprecomp-compiler=enabled >"$work/native.log" 2>&1 ||
        { tail -n 30 "$work/native.log" >&2; die "native configure failed"; }
    "${LOW[@]}" ninja -C "$nat" -j"$jobs" src/compiler/clc/mesa_clc src/compiler/spirv/vtn_bindgen2 \
        src/panfrost/clc/panfrost_compile >>"$work/native.log" 2>&1 ||
        { tail -n 30 "$work/native.log" >&2; die "native build failed"; }
    mkdir -p "$tools"
    cp "$nat/src/compiler/clc/mesa_clc" "$nat/src/compiler/spirv/vtn_bindgen2" "$nat/src/panfrost/clc/panfrost_compile" "$tools/"
fi

# ---- 2. arm64 sysroot (bookworm's dev packages; private apt configuration)
sysroot="$work/sysroot-arm64"
if [ ! -f "$sysroot/.ready" ]; then
    step "arm64 sysroot: libdrm, expat, zlib, zstd, libelf (bookworm)"
    A="$work/apt-arm64"
    mkdir -p "$A/lists/partial" "$A/archives/partial"
    : >"$A/status"
    echo "deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${DEBIAN_MIRROR:-http://deb.debian.org/debian} bookworm main" >"$A/sources.list"
    cat >"$A/apt.conf" <<CONF
APT::Architecture "arm64";
APT::Architectures { "arm64"; };
APT::Install-Recommends "false";
Dir::Etc::SourceList "$A/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "/dev/null";
Dir::State "$A";
Dir::State::Lists "$A/lists";
Dir::State::status "$A/status";
Dir::Cache "$A";
Dir::Cache::Archives "$A/archives";
Debug::NoLocking "true";
CONF
    export APT_CONFIG="$A/apt.conf"
    apt-get -q update >"$A/update.log" 2>&1 || die "apt-get update (arm64) failed (log: $A/update.log)"
    apt-get -q -y --download-only install libdrm-dev libexpat1-dev zlib1g-dev libzstd-dev libelf-dev >"$A/download.log" 2>&1 ||
        die "downloading the arm64 packages failed (log: $A/download.log)"
    unset APT_CONFIG
    rm -rf "$sysroot" && mkdir -p "$sysroot"
    for deb in "$A"/archives/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
    touch "$sysroot/.ready"
fi

# ---- 3. cross build of the driver
x="$work/cross"
cat >"$work/cross.ini" <<INI
[binaries]
c = 'aarch64-linux-gnu-gcc'
cpp = 'aarch64-linux-gnu-g++'
ar = 'aarch64-linux-gnu-ar'
strip = 'aarch64-linux-gnu-strip'
pkg-config = 'pkg-config'
[properties]
pkg_config_libdir = ['$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig', '$sysroot/usr/share/pkgconfig']
sys_root = '$sysroot'
[built-in options]
c_link_args = ['-Wl,-rpath-link=$sysroot/usr/lib/aarch64-linux-gnu', '-L$sysroot/usr/lib/aarch64-linux-gnu']
cpp_link_args = ['-Wl,-rpath-link=$sysroot/usr/lib/aarch64-linux-gnu', '-L$sysroot/usr/lib/aarch64-linux-gnu']
[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'cortex-a76'
endian = 'little'
INI
step "cross: libvulkan_panfrost.so for aarch64 (log: $work/cross.log)"
export PATH="$tools:$PATH" PKG_CONFIG_SYSROOT_DIR="$sysroot"
[ -f "$x/build.ninja" ] || "${LOW[@]}" "$meson" setup "$x" "$S" --cross-file="$work/cross.ini" "${common[@]}" \
    --prefix="$prefix" --libdir=lib -Dllvm=disabled -Dmesa-clc=system -Dprecomp-compiler=system >"$work/cross.log" 2>&1 ||
    { tail -n 30 "$work/cross.log" >&2; die "cross configure failed"; }
"${LOW[@]}" ninja -C "$x" -j"$jobs" >>"$work/cross.log" 2>&1 || { tail -n 30 "$work/cross.log" >&2; die "cross build failed"; }
stage="$work/stage"
rm -rf "$stage"
DESTDIR="$stage" "$meson" install -C "$x" --no-rebuild >>"$work/cross.log" 2>&1 || die "install into the stage failed"
p="$stage$prefix"
[ -f "$p/lib/libvulkan_panfrost.so" ] || die "the install has no lib/libvulkan_panfrost.so"
file "$p/lib/libvulkan_panfrost.so" 2>/dev/null | grep -q aarch64 || readelf -h "$p/lib/libvulkan_panfrost.so" | grep -q AArch64 ||
    die "lib/libvulkan_panfrost.so is not aarch64"

# ---- the stamp rvl's own build writes (doctor reads the series level from it), and the archive
mkdir -p "$p/share/rvl"
python3 - "$p/share/rvl/build.json" "$version" "$(sha256sum "$tarball" | cut -d' ' -f1)" "$repo/patches/mesa" <<'PY'
import hashlib, json, sys
out, version, source, pdir = sys.argv[1:]
names = [l.strip() for l in open(f"{pdir}/series") if l.strip() and not l.startswith("#")]
patches = [{"name": f"mesa/{n}", "sha256": hashlib.sha256(open(f"{pdir}/{n}", "rb").read()).hexdigest()} for n in names]
json.dump({"project": "mesa", "version": version, "source_sha256": source, "patches": patches,
           "options": ["-Dvulkan-drivers=panfrost", "-Dmesa-clc=system", "-Dprecomp-compiler=system", "-Dllvm=disabled"],
           "built_by": "scripts/build-panvk-deb.sh --arm64", "arch": "aarch64"}, open(out, "w"), indent=2)
PY
name="panvk-$version-rvl1-aarch64.tar.xz"
tar -C "$p" --sort=name --owner=0 --group=0 --numeric-owner -cf - lib share | xz -6 -T"$jobs" >"$out/$name"
(cd "$out" && sha256sum "$name" >"$name.sha256")
step "wrote $out/$name ($(stat -c %s "$out/$name") B) and $name.sha256"
echo "install on a board: sudo rvl setup --only mesa,icd --mesa-from prebuilt --mesa-archive $name"
