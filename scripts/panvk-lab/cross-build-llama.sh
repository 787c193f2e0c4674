#!/usr/bin/env bash
# Cross-build llama.cpp's test-backend-ops (Vulkan backend) for aarch64 so it
# runs in the panvk lab:
#
#   scripts/panvk-lab/cross-build-llama.sh LLAMA_TREE BUILD_DIR VULKAN_HEADERS_PREFIX
#   scripts/panvk-lab/run.sh BUILD_DIR/bin/test-backend-ops test -b Vulkan0 -o MUL_MAT ...
#
# VULKAN_HEADERS_PREFIX: a prefix with include/vulkan (>= 1.4.3xx, vulkan.hpp)
# and share/cmake/SPIRV-Headers, e.g. Debian sid's libvulkan-dev and
# spirv-headers unpacked with dpkg-deb -x (ggml needs newer ones than Debian
# 12 ships). The shader generator is built for the host and uses the host's
# glslc (GLSLC=... to choose another, e.g. scripts/panvk-lab/glslc-arm64.sh for
# the int-dot shaders, at the cost of running every shader compile under qemu).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ $# -eq 3 ] || die "usage: cross-build-llama.sh LLAMA_TREE BUILD_DIR VULKAN_HEADERS_PREFIX"
[ -d "$1" ] || die "no such llama.cpp tree: $1"
[ -d "$3" ] || die "no such headers prefix: $3"
# CMake resolves relative cache paths against the build directory: make all absolute.
tree="$(cd "$1" && pwd)"
mkdir -p "$2"
build="$(cd "$2" && pwd)"
hdr="$(cd "$3" && pwd)"
CACHE="$(lab_cache_dir)"
lab_require_ready "$CACHE"
ROOT="$(lab_sysroot "$CACHE")"
need_cmd aarch64-linux-gnu-g++ g++-aarch64-linux-gnu
need_cmd cmake cmake
need_cmd ninja ninja-build
[ -f "$tree/ggml/src/ggml-vulkan/ggml-vulkan.cpp" ] || die "$tree is not a llama.cpp tree"
[ -f "$hdr/include/vulkan/vulkan.hpp" ] || die "no $hdr/include/vulkan/vulkan.hpp"
glslc_args=()
[ -n "${GLSLC:-}" ] && glslc_args=(-DVulkan_GLSLC_EXECUTABLE="$GLSLC")
cmake -S "$tree" -B "$build" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$LAB_DIR/aarch64-toolchain.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DGGML_VULKAN=ON -DLLAMA_BUILD_TESTS=ON \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DVulkan_INCLUDE_DIR="$hdr/include" \
    -DVulkan_LIBRARY="$ROOT/usr/lib/aarch64-linux-gnu/libvulkan.so.1" \
    -DSPIRV-Headers_DIR="$hdr/share/cmake/SPIRV-Headers" \
    "${glslc_args[@]+"${glslc_args[@]}"}"
cmake --build "$build" --target test-backend-ops -j "${JOBS:-2}"
echo "panvk-lab: built $build/bin/test-backend-ops (aarch64)"
