#!/usr/bin/env bash
# Run the lab sysroot's glslc (Debian trixie, 2025.2: knows
# GL_EXT_integer_dot_product) under qemu. Drop-in for a host glslc, e.g. as
# llama.cpp's vulkan-shaders-gen --glslc.
#   GLSLC_ONLY=PATTERN  compile only outputs whose file name contains PATTERN;
#                       other outputs get a 4-byte placeholder (saves hours of
#                       qemu time when only a few of ggml's shaders are wanted)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CACHE="$(lab_cache_dir)"
lab_require_ready "$CACHE"
ROOT="$(lab_sysroot "$CACHE")"
[ -x "$ROOT/usr/bin/glslc" ] || die "no glslc in $ROOT (pins.conf lists it; re-run setup-sysroot.sh)"
glslc_only_filter "$@"
exec env QEMU_LD_PREFIX="$ROOT" qemu-aarch64-static "$ROOT/usr/bin/glslc" "$@"
