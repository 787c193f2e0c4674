#!/usr/bin/env bash
# Cross-compile the lab's own aarch64 tools (bolog.so, spill_harness) against
# the sysroot in CACHE_DIR. Called by setup-sysroot.sh; safe to re-run.
#   scripts/panvk-lab/build-tools.sh [CACHE_DIR]
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CACHE="${1:-$(lab_cache_dir)}"
ROOT="$(lab_sysroot "$CACHE")"
[ -f "$ROOT/usr/include/vulkan/vulkan.h" ] || die "no Vulkan headers in $ROOT (run setup-sysroot.sh)"
need_cmd aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
BIN="$CACHE/bin"
mkdir -p "$BIN" "$CACHE/include"
# Only the Vulkan headers come from the sysroot; libc headers stay the cross
# toolchain's own, so the binaries need no newer glibc than the sysroot has.
ln -sfn "$ROOT/usr/include/vulkan" "$CACHE/include/vulkan"
ln -sfn "$ROOT/usr/include/vk_video" "$CACHE/include/vk_video"
CFLAGS=(-O2 -g -Wall -Wextra -Werror -std=gnu11)
aarch64-linux-gnu-gcc "${CFLAGS[@]}" -shared -fPIC -o "$BIN/bolog.so.tmp" "$LAB_DIR/bolog.c" -ldl
aarch64-linux-gnu-gcc "${CFLAGS[@]}" -isystem "$CACHE/include" -o "$BIN/spill_harness.tmp" \
    "$LAB_DIR/spill_harness.c" "$ROOT/usr/lib/aarch64-linux-gnu/libvulkan.so.1" -ldl \
    -Wl,--allow-shlib-undefined  # libvulkan.so.1 needs the sysroot glibc, resolved at run time
mv "$BIN/bolog.so.tmp" "$BIN/bolog.so"
mv "$BIN/spill_harness.tmp" "$BIN/spill_harness"
echo "panvk-lab: tools built in $BIN"
