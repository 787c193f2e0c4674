#!/usr/bin/env bash
# The native lab chroot's glslc (Debian trixie, 2025.2: knows GL_EXT_integer_dot_product),
# run on the host through the chroot's own loader and libraries, so host paths work as they
# are. Drop-in for a host glslc, e.g. as llama.cpp's vulkan-shaders-gen --glslc, in place of
# glslc-arm64.sh (which needs the qemu sysroot).
#   GLSLC_ONLY=PATTERN  compile only outputs whose file name contains PATTERN; other outputs
#                       get a 4-byte placeholder (ggml's generator compiles ~1100 shaders)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CH="${MESA_LAB:-/work/mesa-lab}/chroot"
[ -x "$CH/usr/bin/glslc" ] || die "no glslc in $CH (build-mesa.sh installs it in the chroot)"
glslc_only_filter "$@"
exec "$CH/lib64/ld-linux-x86-64.so.2" --library-path "$CH/usr/lib/x86_64-linux-gnu:$CH/lib/x86_64-linux-gnu" \
    "$CH/usr/bin/glslc" "$@"
