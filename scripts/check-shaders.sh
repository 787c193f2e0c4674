#!/usr/bin/env bash
# The one place that says how the bench's GLSL becomes the committed SPIR-V.
#   scripts/check-shaders.sh          recompile every shader into a temporary directory, fail if any
#                                     result differs from the committed .spv, then run spirv-val (CI)
#   scripts/check-shaders.sh --write  recompile and overwrite the committed .spv (after editing GLSL)
# Needs glslc (Debian package glslc, shaderc 2023.2 in Debian 12) and spirv-val (spirv-tools).
set -euo pipefail
cd "$(dirname "$0")/../src/bench/shaders"

TARGET=vulkan1.1
# output name | source | extra glslc flags
SHADERS=(
    "gemm_reg_f32.spv|gemm_reg.comp|"
    "gemm_reg_f16.spv|gemm_reg.comp|-DF16"
    "gemm_tiled_f32.spv|gemm_tiled.comp|"
    "gemm_tiled_peeled_f32.spv|gemm_tiled.comp|-DPEEL_LAST_STEP"
    "gemm_tiled_splitk_f32.spv|gemm_tiled.comp|-DSPLIT_K"
    "gemm_tiled_f16.spv|gemm_tiled.comp|-DF16"
    "gemm_tiled_peeled_f16.spv|gemm_tiled.comp|-DF16 -DPEEL_LAST_STEP"
    "gemm_tiled_splitk_f16.spv|gemm_tiled.comp|-DF16 -DSPLIT_K"
    "gemm_tiled_f16s.spv|gemm_tiled.comp|-DF16 -DSHARED_F16"
    "gemm_tiled_peeled_f16s.spv|gemm_tiled.comp|-DF16 -DSHARED_F16 -DPEEL_LAST_STEP"
    "gemm_tiled_splitk_f16s.spv|gemm_tiled.comp|-DF16 -DSHARED_F16 -DSPLIT_K"
    "gemm_tiled_q4_0.spv|gemm_tiled.comp|-DQ4_0"
    "gemm_tiled_peeled_q4_0.spv|gemm_tiled.comp|-DQ4_0 -DPEEL_LAST_STEP"
    "gemm_tiled_splitk_q4_0.spv|gemm_tiled.comp|-DQ4_0 -DSPLIT_K"
    "gemm_tiled_int8.spv|gemm_tiled_int8.comp|"
    "gemm_tiled_splitk_int8.spv|gemm_tiled_int8.comp|-DSPLIT_K"
    "gemm_int8.spv|gemm_int8.comp|"
    "gemm_q4_0.spv|gemm_q4_0.comp|"
    "peak_f32.spv|peak.comp|"
    "peak_f16.spv|peak.comp|-DF16"
    "peak_int8.spv|peak_int8.comp|"
    "probe_spill.spv|probe_spill.comp|"
)

write=0
case "${1:-}" in
    --write) write=1 ;;
    "") ;;
    *) echo "usage: $0 [--write]" >&2; exit 2 ;;
esac

for tool in glslc spirv-val; do
    command -v "$tool" >/dev/null || { echo "check-shaders: $tool not found (apt-get install glslc spirv-tools)" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

status=0
for entry in "${SHADERS[@]}"; do
    IFS='|' read -r out src flags <<<"$entry"
    # shellcheck disable=SC2086 # flags is a word list on purpose
    glslc -O --target-env="$TARGET" -fshader-stage=compute $flags "$src" -o "$tmp/$out"
    spirv-val --target-env "$TARGET" "$tmp/$out"
    if [ "$write" -eq 1 ]; then
        cp "$tmp/$out" "$out"
        echo "wrote $out"
    elif ! cmp -s "$tmp/$out" "$out"; then
        echo "check-shaders: $out differs from a fresh compile of $src $flags (run scripts/check-shaders.sh --write and commit)" >&2
        status=1
    else
        echo "ok $out"
    fi
done
exit $status
