#!/usr/bin/env bash
# Before/after spill table for llama.cpp's matmul pipelines on panvk.
#
#   scripts/panvk-lab/ggml-mm-report.sh SPV_DIR TILE[,TILE...] SHADER[,SHADER...] [ROWS]
#
# SPV_DIR: ggml's generated SPIR-V (BUILD/ggml/src/ggml-vulkan/vulkan-shaders.spv;
#          for the int-dot shaders see docs/panvk-lab.md: glslc-arm64.sh).
# TILE:    a ggml warptile as ggml-vulkan.cpp builds it for a subgroup-16 device
#          (Mali), per shader family:
#            up-l, up-m, up-s     upstream large/medium/small (unpatched tree)
#            mali-m, mali-s       tiles of patches/llama.cpp (16 accumulators/thread)
# SHADER:  f16      matmul_f16_f32_f16acc   (f16 weights x f32 activations)
#          f32      matmul_f32_f32          (f32 x f32, f32 accumulators)
#          q4_0 q8_0 q4_k q6_k   matmul_quant_f32_f16acc with MmTypeA = that type
#                   (dequantising mul_mm, used when the device or glslc lacks int dot)
#          q4_0i q8_0i q4_ki q6_ki   matmul_<type>_q8_1 (int-dot mul_mmq, the path
#                   ggml takes on panvk when built with a glslc that has int dot)
#          f16-fp32 q4_0-fp32 q8_0-fp32 q4_k-fp32 q4_0i-fp32 q4_ki-fp32: the same
#                   shaders built for devices without fp16 (GGML_VK_DISABLE_F16=1)
#          mf16 mf16-f32acc mf16b mf32 mq4_0 mq8_0 mq4_k mq6_k mq4_0-f32acc mq4_k-f32acc:
#                   patches/llama.cpp 0003's mul_mm_mali.comp pipelines (tiles mali-m/mali-s)
# ROWS:    M (weight rows, default 4096). Shapes measured: ubatch 128, 256, 512,
#          i.e. groups = (ceil(M/BM), ceil(n/BN), 1) as ggml dispatches them.
#
# Prints one tab-separated row per shader x tile x ubatch:
#   shader tile ubatch groups spills fills regs tls_bytes wls_bytes cmdbuf_bytes end_result compile_s
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ $# -ge 3 ] || die "usage: ggml-mm-report.sh SPV_DIR TILE[,TILE...] SHADER[,SHADER...] [ROWS]"
spv_dir="$1"
IFS=, read -r -a tiles <<<"$2"
IFS=, read -r -a shaders <<<"$3"
rows="${4:-4096}"

# tile_spec and shader_file: ggml-tiles.sh (throughput-report.sh --ggml uses them too).
. "$LAB_DIR/ggml-tiles.sh"

for sh in "${shaders[@]}"; do
    read -r file family qtype <<<"$(shader_file "$sh")"
    [ -f "$spv_dir/$file" ] || die "no $spv_dir/$file"
    for t in "${tiles[@]}"; do
        read -r -a wt <<<"$(tile_spec "$t" "$family")"
        args=()
        for i in "${!wt[@]}"; do args+=(--spec "$i=${wt[$i]}"); done
        case "$family" in
            # ALIGNED: the pipeline ggml picks when K is tile-aligned (mul_mmq has none)
            mm | mmq | mali16 | mali32) args+=(--spec 11=1) ;;
        esac
        [ "$qtype" -ge 0 ] && args+=(--spec "12=$qtype")
        bm=${wt[1]}
        bn=${wt[2]}
        for n in 128 256 512; do
            args+=(--groups "$(((rows + bm - 1) / bm)),$(((n + bn - 1) / bn)),1")
        done
        i=0
        "$LAB_DIR/spill-report.sh" "$spv_dir/$file" "${args[@]}" --row |
            while IFS=$'\t' read -r _ groups rest; do
                n=$((128 << i))
                i=$((i + 1))
                printf '%s\t%s\t%s\t%s\t%s\n' "$sh" "$t" "$n" "$groups" "$rest"
            done
    done
done
