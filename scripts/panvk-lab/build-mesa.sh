#!/usr/bin/env bash
# Native x86_64 panvk lab: build Mesa 26.2's panvk and the panfrost noop DRM
# shim on this machine, in a cached Debian trixie chroot (Debian 12 lacks
# meson >= 1.4 and SPIRV-Tools >= 2024.1, which 26.x needs for mesa_clc).
#
#   scripts/panvk-lab/build-mesa.sh [--patched] [--patch FILE]... [--variant NAME]
#                                   [--tree DIR|--mirror GITDIR] [--tests]
#
#   --patched      apply patches/mesa/series (git am) before building; the build
#                  goes to build-patched/ and the tree to src-patched/
#   --patch FILE   also apply FILE (git am, after the series if --patched); repeatable
#   --variant NAME build into build-NAME/ from src-NAME/ (default: stock, or patched
#                  with --patched), so a trial patch never replaces a build others use;
#                  native-run.sh and throughput-report.sh take the same --variant
#   --tree DIR     use this Mesa tree (a checkout or unpacked tarball) instead
#                  of checking one out of the mirror; it is copied, never changed
#   --mirror GIT   bare git dir of github:leegao/mesa-26.2 (default: the fetch
#                  tool's /work/.mirror/leegao+mesa-26.2/repo), commit $MESA_COMMIT,
#                  plus mesa-rc1-26.2.4-backports.patch (the two 26.2.4 changes
#                  patches/mesa sits on; MESA_BACKPORTS=0 leaves plain rc1)
#   --tests        also run the panfrost unit tests (meson test --suite panfrost)
#
# Everything goes under $MESA_LAB (default /work/mesa-lab, outside the repo):
#   chroot/                 trixie chroot (debootstrap, cached; stamp .lab-ready)
#   chroot/lab/src-stock    26.2 tree at $MESA_COMMIT (src-patched: + the series)
#   chroot/lab/build-stock  meson build dir (build-patched for --patched)
#   chroot/lab/ccache       compiler cache shared by both builds
# Outputs (paths inside the chroot; prefix with $MESA_LAB/chroot on the host):
#   /lab/build-*/src/panfrost/vulkan/libvulkan_panfrost.so
#   /lab/build-*/src/panfrost/vulkan/panfrost_devenv_icd.x86_64.json
#   /lab/build-*/src/panfrost/drm-shim/libpanfrost_noop_drm_shim.so
# The binaries link trixie's glibc: run them inside the chroot (native-run.sh).
# Every heavy step runs under nice -n 19 / ionice -c3 with ninja -j$JOBS (2).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MESA_LAB="${MESA_LAB:-/work/mesa-lab}"
MESA_COMMIT="${MESA_COMMIT:-3c34d70}"
MIRROR="${MESA_MIRROR:-/work/.mirror/leegao+mesa-26.2/repo}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
JOBS="${JOBS:-2}"
patched=0
tree=""
tests=0
extra=()
vname=""
while [ $# -gt 0 ]; do
    case "$1" in
        --patched) patched=1; shift ;;
        --patch) [ -f "${2:-}" ] || die "--patch: no file '${2:-}'"; extra+=("$(realpath "$2")"); shift 2 ;;
        --variant) vname="${2:-}"; [[ "$vname" =~ ^[a-z0-9][a-z0-9-]*$ ]] || die "--variant: a lower-case name, got '$vname'"; shift 2 ;;
        --tree) tree="$2"; shift 2 ;;
        --mirror) MIRROR="$2"; shift 2 ;;
        --tests) tests=1; shift ;;
        *) die "usage: build-mesa.sh [--patched] [--patch FILE]... [--variant NAME] [--tree DIR|--mirror GITDIR] [--tests]" ;;
    esac
done
[ "$(id -u)" = 0 ] || die "build-mesa.sh needs root (debootstrap, chroot, bind mounts)"

CH="$MESA_LAB/chroot"
variant=stock
[ "$patched" = 1 ] && variant=patched
[ -n "$vname" ] && variant=$vname
SRC="$CH/lab/src-$variant"
BUILD="$CH/lab/build-$variant"
t0=$(date +%s)
step() { printf '[build-mesa %s +%ds] %s\n' "$(date -u +%H:%M:%S)" "$(($(date +%s) - t0))" "$*"; }
LOW=(nice -n 19 ionice -c3)

# Packages the 26.2 panvk + drm-shim build needs in trixie (what this lab
# actually installed; see docs/panvk-lab.md "Native lab").
PKGS=(build-essential git ca-certificates pkg-config ninja-build meson ccache
    python3-mako python3-yaml python3-ply python3-pycparser python3-packaging
    bison flex glslang-tools libdrm-dev libexpat1-dev zlib1g-dev libzstd-dev
    llvm-19-dev libclang-cpp19-dev libclang-19-dev libclc-19-dev libclc-19 libllvmspirvlib-19-dev
    spirv-tools libgtest-dev libvulkan-dev vulkan-tools glslc)

# ---- bind mounts: /proc and /dev inside the chroot, for the lifetime of this script
mounted=()
cleanup() {
    local m
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        m="${mounted[$i]}"
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
}
trap cleanup EXIT
chroot_mounts() {
    local d
    for d in proc dev; do
        mountpoint -q "$CH/$d" && continue
        mkdir -p "$CH/$d"
        if [ "$d" = proc ]; then mount -t proc proc "$CH/proc"; else mount --bind /dev "$CH/dev"; fi
        mounted+=("$CH/$d")
    done
}
in_chroot() { chroot "$CH" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 CCACHE_DIR=/lab/ccache CCACHE_NOHASHDIR=1 CCACHE_BASEDIR=/lab "$@"; }

# ---- (a) the chroot
if [ ! -f "$CH/.lab-ready" ]; then
    need_cmd debootstrap debootstrap
    step "making the trixie chroot in $CH (debootstrap minbase from $DEBIAN_MIRROR)"
    mkdir -p "$MESA_LAB"
    if [ ! -x "$CH/usr/bin/apt-get" ] || [ ! -f "$CH/.lab-debootstrap" ]; then
        rm -rf "$CH"
        "${LOW[@]}" debootstrap --variant=minbase trixie "$CH" "$DEBIAN_MIRROR" >"$MESA_LAB/debootstrap.log" 2>&1 ||
            { tail -n 20 "$MESA_LAB/debootstrap.log" >&2; die "debootstrap failed (log: $MESA_LAB/debootstrap.log)"; }
        touch "$CH/.lab-debootstrap"
    fi
    chroot_mounts
    step "installing ${#PKGS[@]} build packages in the chroot"
    in_chroot apt-get update -q >"$MESA_LAB/apt.log" 2>&1
    DEBIAN_FRONTEND=noninteractive "${LOW[@]}" chroot "$CH" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${PKGS[@]}" >>"$MESA_LAB/apt.log" 2>&1 ||
        { tail -n 20 "$MESA_LAB/apt.log" >&2; die "apt-get install in the chroot failed (log: $MESA_LAB/apt.log)"; }
    in_chroot apt-get clean
    in_chroot dpkg-query -W -f '${Package} ${Version}\n' >"$CH/.lab-packages.txt"
    touch "$CH/.lab-ready"
    step "chroot ready ($(du -sh --exclude=lab --exclude=proc --exclude=dev "$CH" 2>/dev/null | cut -f1))"
else
    step "chroot cached ($CH)"
fi
chroot_mounts
# A package list that grew since the chroot was made: install what is missing.
missing_pkgs=()
for p in "${PKGS[@]}"; do
    in_chroot dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing_pkgs+=("$p")
done
if [ ${#missing_pkgs[@]} -gt 0 ]; then
    step "installing ${missing_pkgs[*]} in the chroot"
    "${LOW[@]}" chroot "$CH" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing_pkgs[@]}" >>"$MESA_LAB/apt.log" 2>&1 ||
        { tail -n 20 "$MESA_LAB/apt.log" >&2; die "apt-get install in the chroot failed"; }
    in_chroot apt-get clean
    in_chroot dpkg-query -W -f '${Package} ${Version}\n' >"$CH/.lab-packages.txt"
fi
mkdir -p "$CH/lab/ccache"

# ---- (b) the tree (c) the series
BACKPORTS="${MESA_BACKPORTS:-1}"
BACKPORT_PATCH="$REPO_ROOT/scripts/panvk-lab/mesa-rc1-26.2.4-backports.patch"
stamp_want="$MESA_COMMIT"
[ -z "$tree" ] && [ "$BACKPORTS" = 1 ] && stamp_want="$MESA_COMMIT+backports-$(sha256sum <"$BACKPORT_PATCH" | cut -c1-16)"
series="$REPO_ROOT/patches/mesa/series"
if [ "$patched" = 1 ]; then
    [ -s "$series" ] || die "--patched but $series is empty or missing"
    stamp_want="$stamp_want+$(cd "$REPO_ROOT/patches/mesa" && cat series $(grep -v '^#' series) | sha256sum | cut -c1-16)"
fi
[ -n "$tree" ] && stamp_want="$stamp_want tree=$(realpath "$tree")"
for f in "${extra[@]+"${extra[@]}"}"; do stamp_want="$stamp_want +$(sha256sum <"$f" | cut -c1-16)"; done
if [ ! -f "$SRC/.lab-tree" ] || [ "$(cat "$SRC/.lab-tree")" != "$stamp_want" ]; then
    rm -rf "$SRC.tmp"
    mkdir -p "$SRC.tmp"
    if [ -n "$tree" ]; then
        step "copying the Mesa tree from $tree"
        cp -a "$tree/." "$SRC.tmp/"
        [ -d "$SRC.tmp/.git" ] || git -C "$SRC.tmp" init -q
    else
        [ -d "$MIRROR" ] || die "no Mesa mirror at $MIRROR (fetch github:leegao/mesa-26.2, or pass --tree)"
        step "checking out $MESA_COMMIT from $MIRROR"
        # A few large test blobs (teflon *.tflite, intel oa-*.xml) are absent
        # from the mirror: list them and leave them out of the archive.
        missing=()
        lst=$(git --git-dir="$MIRROR" ls-tree -r "$MESA_COMMIT")
        while read -r sha; do
            missing+=(":(exclude)$(awk -F'\t' -v s="$sha" 'index($1, s) { print $2 }' <<<"$lst")")
        done < <(awk -F'\t' '{ split($1, a, " "); print a[3] }' <<<"$lst" |
            git --git-dir="$MIRROR" cat-file --batch-check | awk '$2 == "missing" { print $1 }')
        step "${#missing[@]} blobs absent from the mirror, left out"
        # (git may still print "invalid object" for an excluded blob; the
        # count check below is what matters)
        git --git-dir="$MIRROR" archive "$MESA_COMMIT" -- . "${missing[@]}" 2>"$MESA_LAB/archive.log" |
            tar -x -C "$SRC.tmp"
        want=$(($(wc -l <<<"$lst") - ${#missing[@]}))
        got=$(find "$SRC.tmp" -type f -o -type l | wc -l)
        [ "$got" -eq "$want" ] || die "checked out $got files, expected $want (see $MESA_LAB/archive.log)"
        git -C "$SRC.tmp" init -q
        git -C "$SRC.tmp" add -A
        git -C "$SRC.tmp" -c user.name=lab -c user.email=lab@localhost commit -q -m "Mesa $(cat "$SRC.tmp/VERSION") ($MESA_COMMIT)"
        # patches/mesa is rebased on 26.2.4, whose tarball does not download here: the two
        # 26.2.4 changes it sits on, backported to rc1 (docs/mesa-26.2.4-rebase.md), make the
        # lab tree for stock and patched builds alike.
        if [ "$BACKPORTS" = 1 ]; then
            step "applying $(basename "$BACKPORT_PATCH") (rc1 + the 26.2.4 TLS-size and malloc-check changes)"
            git -C "$SRC.tmp" -c user.name=lab -c user.email=lab@localhost am -q --keep-cr "$BACKPORT_PATCH" ||
                die "$BACKPORT_PATCH does not apply to $MESA_COMMIT"
        fi
    fi
    printf 'VERSION %s\n' "$(cat "$SRC.tmp/VERSION")"
    if [ "$patched" = 1 ]; then
        n=0
        while IFS= read -r p || [ -n "$p" ]; do
            case "$p" in '' | '#'*) continue ;; esac
            step "applying $p"
            git -C "$SRC.tmp" -c user.name=lab -c user.email=lab@localhost am -q --keep-cr \
                "$REPO_ROOT/patches/mesa/$p" || die "$p does not apply to $MESA_COMMIT"
            n=$((n + 1))
        done <"$series"
        step "$n patches applied"
    fi
    for f in "${extra[@]+"${extra[@]}"}"; do
        step "applying $(basename "$f")"
        git -C "$SRC.tmp" -c user.name=lab -c user.email=lab@localhost am -q --keep-cr "$f" ||
            die "$f does not apply to $MESA_COMMIT"
    done
    printf '%s\n' "$stamp_want" >"$SRC.tmp/.lab-tree"
    rm -rf "$SRC" "$BUILD"
    mv "$SRC.tmp" "$SRC"
else
    step "tree cached ($SRC, $(cat "$SRC/VERSION"))"
fi

# ---- (d) configure and build
MESON_OPTS=(-Dvulkan-drivers=panfrost -Dgallium-drivers= -Dtools=drm-shim -Dplatforms=
    -Dbuildtype=debugoptimized -Dbuild-tests=true -Dllvm=enabled -Dglx=disabled -Degl=disabled
    -Dgles1=disabled -Dgles2=disabled -Dopengl=false -Dgbm=disabled -Dvalgrind=disabled
    -Dlibunwind=disabled -Dzstd=enabled -Dvideo-codecs= -Dshared-glapi=disabled)
rel_src="/lab/src-$variant"
rel_build="/lab/build-$variant"
if [ ! -f "$BUILD/build.ninja" ]; then
    step "meson setup $rel_build ${MESON_OPTS[*]}"
    mkdir -p "$BUILD"
    "${LOW[@]}" chroot "$CH" /usr/bin/env -i HOME=/root PATH=/usr/lib/ccache:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 CCACHE_DIR=/lab/ccache CCACHE_NOHASHDIR=1 CCACHE_BASEDIR=/lab \
        meson setup "$rel_build" "$rel_src" "${MESON_OPTS[@]}" >"$BUILD/../meson-$variant.log" 2>&1 ||
        { tail -n 30 "$BUILD/../meson-$variant.log" >&2; die "meson setup failed (log: $BUILD/../meson-$variant.log)"; }
fi
# Only what the lab needs: the driver, its ICD file, the shim and (with
# --tests) the executables of meson's panfrost test suite. -Dbuild-tests=true
# also defines NIR/util tests that take longer than panvk itself; they are
# not built.
targets=(src/panfrost/vulkan/libvulkan_panfrost.so src/panfrost/drm-shim/libpanfrost_noop_drm_shim.so
    "src/panfrost/vulkan/panfrost_devenv_icd.$(uname -m).json")
if [ "$tests" = 1 ]; then
    while read -r t; do targets+=("$t"); done < <(
        in_chroot meson introspect "$rel_build" --tests | python3 -c '
import json, sys
for t in json.load(sys.stdin):
    if "mesa:panfrost" in t["suite"]:
        for c in t["cmd"]:
            if c.startswith(sys.argv[1] + "/") and "/../" not in c:
                print(c[len(sys.argv[1]) + 1:])
' "$rel_build" | sort -u)
fi
step "ninja -j$JOBS ${#targets[@]} targets (log: $CH/lab/ninja-$variant.log)"
"${LOW[@]}" chroot "$CH" /usr/bin/env -i HOME=/root PATH=/usr/lib/ccache:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 CCACHE_DIR=/lab/ccache CCACHE_NOHASHDIR=1 CCACHE_BASEDIR=/lab \
    ninja -C "$rel_build" -j"$JOBS" "${targets[@]}" >"$CH/lab/ninja-$variant.log" 2>&1 &
ninja_pid=$!
ticks=0
while kill -0 "$ninja_pid" 2>/dev/null; do
    sleep 5
    ticks=$((ticks + 1))
    [ $((ticks % 12)) = 0 ] || continue
    last=$(grep -o '^\[[0-9]*/[0-9]*\]' "$CH/lab/ninja-$variant.log" | tail -n 1 || true)
    kill -0 "$ninja_pid" 2>/dev/null && step "ninja ${last:-starting}"
done
wait "$ninja_pid" || { tail -n 30 "$CH/lab/ninja-$variant.log" >&2; die "ninja failed (log: $CH/lab/ninja-$variant.log)"; }
for f in src/panfrost/vulkan/libvulkan_panfrost.so src/panfrost/drm-shim/libpanfrost_noop_drm_shim.so; do
    [ -f "$BUILD/$f" ] || die "build finished without $f"
done
icd=$(ls "$BUILD"/src/panfrost/vulkan/panfrost_devenv_icd.*.json 2>/dev/null | head -n 1)
step "built: $rel_build/src/panfrost/vulkan/libvulkan_panfrost.so, drm-shim, ICD ${icd#$CH}"

if [ "$tests" = 1 ]; then
    step "meson test --suite panfrost (log: $CH/lab/test-$variant.log)"
    "${LOW[@]}" chroot "$CH" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        meson test -C "$rel_build" --no-rebuild --suite panfrost --num-processes "$JOBS" --print-errorlogs \
        >"$CH/lab/test-$variant.log" 2>&1 || { tail -n 30 "$CH/lab/test-$variant.log" >&2; die "panfrost tests failed"; }
    grep -E '^(Ok|Fail|Expected Fail|Skipped|Timeout):' "$CH/lab/test-$variant.log" | tr -s ' ' | paste -sd' '
fi
step "done: $variant in $(( ($(date +%s) - t0) / 60 )) min $(( ($(date +%s) - t0) % 60 )) s; disk: chroot $(du -sh --exclude=lab --exclude=proc --exclude=dev "$CH" 2>/dev/null | cut -f1), tree $(du -sh "$SRC" | cut -f1), build $(du -sh "$BUILD" | cut -f1), ccache $(du -sh "$CH/lab/ccache" | cut -f1), all $(du -sh --exclude=proc --exclude=dev "$MESA_LAB" 2>/dev/null | cut -f1)"
