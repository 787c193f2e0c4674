#!/usr/bin/env bash
# Run an aarch64 program in the panvk lab: qemu-aarch64-static with the lab
# sysroot as its library prefix, panvk (Mesa 26.1.6) as the only Vulkan
# driver, the noop DRM shim pretending to be a Mali-G610 (PAN_GPU_ID=a867),
# and the bolog preload recording every panthor BO allocation.
#
#   scripts/panvk-lab/run.sh PROGRAM [ARGS...]
#
# PROGRAM is a path inside the sysroot (/usr/bin/vulkaninfo) or else on the host
# (a cross-built binary). Environment passed to the program:
#   PANVK_LAB_CACHE   lab cache (default .cache/panvk-lab)
#   PAN_GPU_ID        GPU the shim reports (default a867 = G610)
#   BOLOG, BOLOG_MIN, BOLOG_FILE   see bolog.c
#   LAB_ENV="A=1 B=2" extra variables for the guest (e.g. BIFROST_MESA_DEBUG=shaderdb,
#                     GGML_VK_DISABLE_F16=1); MESA_SHADER_CACHE_DISABLE=true is always set
#                     so every run compiles (and prints shaderdb stats) afresh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ $# -ge 1 ] || die "usage: run.sh PROGRAM [ARGS...]"
CACHE="$(lab_cache_dir)"
lab_require_ready "$CACHE"
ROOT="$(lab_sysroot "$CACHE")"
need_cmd qemu-aarch64-static qemu-user-static

prog="$1"
shift
# An absolute path is looked up in the sysroot first (/usr/bin/vulkaninfo also
# exists on the host, as an x86 binary).
if [[ "$prog" == /* ]] && [ -e "$ROOT$prog" ]; then
    prog="$ROOT$prog"
fi
[ -e "$prog" ] || die "no such program: $1 (neither on the host nor in $ROOT)"

# bolog first so its ioctl() wrapper sees the calls before the shim answers them.
preload="$CACHE/bin/bolog.so:/$lab_shim_rel"
guest_env=(
    "LD_PRELOAD=$preload"
    "PAN_GPU_ID=${PAN_GPU_ID:-a867}"
    "VK_DRIVER_FILES=/$lab_icd_rel"
    "VK_ICD_FILENAMES=/$lab_icd_rel"
    "VK_LOADER_LAYERS_DISABLE=~all~"
    "MESA_SHADER_CACHE_DISABLE=true"
)
for v in BOLOG BOLOG_MIN BOLOG_FILE; do
    [ -n "${!v:-}" ] && guest_env+=("$v=${!v}")
done
if [ -n "${LAB_ENV:-}" ]; then
    read -r -a extra <<<"$LAB_ENV"
    for kv in "${extra[@]}"; do
        [[ "$kv" == *=* ]] || die "LAB_ENV entry '$kv' is not NAME=VALUE"
        guest_env+=("$kv")
    done
fi

# qemu resolves absolute library paths under QEMU_LD_PREFIX, so the guest sees
# the sysroot as its /usr; host paths (the cross-built tools) stay valid too.
set_env=$(IFS=,; printf '%s' "${guest_env[*]}")
exec env QEMU_LD_PREFIX="$ROOT" QEMU_SET_ENV="$set_env" qemu-aarch64-static "$prog" "$@"
