# Shared helpers for the panvk lab scripts (sourced, not executed).
# shellcheck shell=bash

LAB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$LAB_DIR/../.." && pwd)"

# CACHE_DIR: first non-option argument of setup-sysroot.sh, else $PANVK_LAB_CACHE,
# else .cache/panvk-lab in the repository (ignored by git).
lab_cache_dir() {
    printf '%s\n' "${PANVK_LAB_CACHE:-$REPO_ROOT/.cache/panvk-lab}"
}

die() {
    printf 'panvk-lab: %s\n' "$*" >&2
    exit 1
}

need_cmd() {
    command -v "$1" >/dev/null 2>&1 || die "missing host tool '$1' (apt-get install $2)"
}

# Where the sysroot lives inside the cache, and the files run.sh needs from it.
lab_sysroot() { printf '%s/sysroot\n' "$1"; }
lab_shim_rel="usr/lib/aarch64-linux-gnu/libpanfrost_noop_drm_shim.so"
lab_icd_rel="usr/share/vulkan/icd.d/panfrost_icd.json"

# Ready means: setup-sysroot.sh finished (it writes the stamp last).
lab_require_ready() {
    local cache="$1"
    [ -f "$cache/sysroot/.lab/ready" ] ||
        die "no lab sysroot in $cache (run scripts/panvk-lab/setup-sysroot.sh first)"
}

# GLSLC_ONLY=PATTERN for the glslc wrappers (glslc-arm64.sh, glslc-native.sh): when the -o
# output's file name lacks PATTERN, write a 4-byte placeholder and exit, so ggml's generator
# compiles only the shaders wanted.
glslc_only_filter() {
    [ -n "${GLSLC_ONLY:-}" ] || return 0
    local out="" prev="" a
    for a in "$@"; do
        [ "$prev" = "-o" ] && out="$a"
        prev="$a"
    done
    out="${out%\"}"
    out="${out#\"}"
    if [ -n "$out" ] && [[ "$(basename "$out")" != *"$GLSLC_ONLY"* ]]; then
        printf '\003\002\043\007' >"$out"
        exit 0
    fi
}
