#!/usr/bin/env bash
# Run a program against the natively built panvk (build-mesa.sh) inside the
# lab's trixie chroot: the panfrost noop DRM shim as a Mali-G610
# (PAN_GPU_ID=a867), panvk as the only ICD, the bolog BO logger preloaded
# before the shim, the shader cache off.
#
#   scripts/panvk-lab/native-run.sh [--patched|--variant NAME] PROGRAM [ARGS...]
#   scripts/panvk-lab/native-run.sh [--patched|--variant NAME] spill_harness SHADER.spv [harness options]
#
# --variant NAME runs build-mesa.sh's build-NAME (--patched is --variant patched).
#
# PROGRAM is a path inside the chroot, or `spill_harness` / `vulkaninfo`.
# Files on the host given as arguments are not visible in the chroot: copy
# shaders with NATIVE_COPY="a.spv b.spv" (they land in /lab/in/, and the
# arguments naming them are rewritten). The lab's C tools (bolog.so,
# spill_harness) are rebuilt in the chroot when their sources change.
#   LAB_ENV="A=1 B=2"   extra variables (e.g. BIFROST_MESA_DEBUG=shaderdb)
#   BOLOG, BOLOG_MIN    see bolog.c
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MESA_LAB="${MESA_LAB:-/work/mesa-lab}"
CH="${LAB_CHROOT:-$MESA_LAB/chroot}"
variant=stock
case "${1:-}" in
    --patched) variant=patched; shift ;;
    --rvl) variant=rvl; shift ;;
    --variant)
        [ $# -ge 2 ] || die "--variant needs a name"
        variant="$2"
        shift 2
        ;;
esac
[[ "$variant" =~ ^[a-z0-9][a-z0-9-]*$ ]] || die "--variant: '$variant' is not a build name (a-z, 0-9, -)"
[ $# -ge 1 ] || die "usage: native-run.sh [--patched|--rvl|--variant NAME] PROGRAM [ARGS...]"
if [ "$variant" = rvl ]; then
    # `--rvl`: the panvk `rvl setup` installed in LAB_CHROOT (bookworm-setup.sh), through the
    # ICD setup wrote, with the shim bookworm-setup.sh built from the same tree.
    shim=/lab/shim/build/src/panfrost/drm-shim/libpanfrost_noop_drm_shim.so
    icd=/etc/vulkan/icd.d/rvl_panvk.aarch64.json
    [ -f "$CH$shim" ] && [ -f "$CH$icd" ] || die "no rvl-installed panvk and shim in $CH (run bookworm-setup.sh)"
else
    B="/lab/build-$variant"
    shim="$B/src/panfrost/drm-shim/libpanfrost_noop_drm_shim.so"
    [ -f "$CH$shim" ] || die "no $variant build in $CH$B (run build-mesa.sh, with --patched or --variant $variant for those)"
    icd=$(cd "$CH" && ls ."$B"/src/panfrost/vulkan/panfrost_devenv_icd.*.json | head -n 1)
    icd="${icd#.}"
fi

mounted=()
cleanup() { for m in "${mounted[@]+"${mounted[@]}"}"; do umount "$m" 2>/dev/null || umount -l "$m" || true; done; }
trap cleanup EXIT
for d in proc dev; do
    mountpoint -q "$CH/$d" && continue
    if [ "$d" = proc ]; then mount -t proc proc "$CH/proc"; else mount --bind /dev "$CH/dev"; fi
    mounted+=("$CH/$d")
done

# The lab's tools, built against the chroot's libc and Vulkan loader.
T="$CH/lab/tools"
mkdir -p "$T" "$CH/lab/in"
for f in bolog.c spill_harness.c; do
    cmp -s "$LAB_DIR/$f" "$T/$f" || cp "$LAB_DIR/$f" "$T/$f"
done
if [ ! -x "$T/spill_harness" ] || [ "$T/spill_harness.c" -nt "$T/spill_harness" ] ||
    [ ! -f "$T/bolog.so" ] || [ "$T/bolog.c" -nt "$T/bolog.so" ]; then
    chroot "$CH" sh -c 'cd /lab/tools &&
        gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -shared -fPIC -o bolog.so bolog.c -ldl &&
        gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -o spill_harness spill_harness.c -lvulkan -ldl' ||
        die "building the lab tools in the chroot failed"
fi

prog="$1"
shift
case "$prog" in
    spill_harness) prog=/lab/tools/spill_harness ;;
    vulkaninfo) prog=/usr/bin/vulkaninfo ;;
esac
args=()
for a in "$@"; do
    if [ -f "$a" ] && [[ "$a" != /lab/* ]]; then
        dst="/lab/in/$(sha256sum <"$a" | cut -c1-12)-$(basename "$a")"
        [ -f "$CH$dst" ] || cp "$a" "$CH$dst"
        a="$dst"
    fi
    args+=("$a")
done
envs=(
    "LD_PRELOAD=/lab/tools/bolog.so:$shim"
    "PAN_GPU_ID=${PAN_GPU_ID:-a867}"
    "VK_DRIVER_FILES=$icd"
    "VK_ICD_FILENAMES=$icd"
    "VK_LOADER_LAYERS_DISABLE=~all~"
    "MESA_SHADER_CACHE_DISABLE=true"
    "HOME=/root" "PATH=/usr/bin:/bin" "LANG=C.UTF-8"
)
for v in BOLOG BOLOG_MIN BOLOG_FILE; do
    [ -n "${!v:-}" ] && envs+=("$v=${!v}")
done
if [ -n "${LAB_ENV:-}" ]; then
    read -r -a extra <<<"$LAB_ENV"
    envs+=("${extra[@]}")
fi
chroot "$CH" /usr/bin/env -i "${envs[@]}" nice -n 19 "$prog" "${args[@]+"${args[@]}"}"
