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

# {BLOCK_SIZE, BM, BN, BK, WM, WN, WMITER, TM, TN, TK, WARP} for family
# mm (float A, BK 16), mmq (quantised A, BK 32), int (mul_mmq), int_k (mul_mmq,
# k-quants). Values: ggml-vulkan.cpp ggml_vk_load_shaders, non-coopmat branch,
# subgroup size 16 (upstream) and patches/llama.cpp/0001 (mali-*).
tile_spec() {
    case "$1:$2" in
        up-l:mm) echo "128 128 128 16 32 64 2 4 4 1 16" ;;
        up-l:mmq | up-l:int) echo "128 128 128 32 32 64 2 4 4 1 16" ;;
        up-l:int_k) echo "128 128 128 32 32 64 1 4 4 1 16" ;;
        up-m:mm) echo "128 64 64 16 16 32 2 4 2 1 16" ;;
        up-m:mmq) echo "128 64 64 32 16 32 2 4 2 1 16" ;;
        up-m:int) echo "128 64 64 32 16 32 2 2 2 1 16" ;;
        up-m:int_k) echo "128 64 64 32 16 32 1 2 2 1 16" ;;
        up-s:mm) echo "32 32 32 16 32 32 2 2 2 1 16" ;;
        up-s:mmq) echo "32 32 32 32 32 32 2 2 2 1 16" ;;
        up-s:int) echo "32 32 32 32 32 32 2 2 1 1 16" ;;
        up-s:int_k) echo "32 32 32 32 32 32 1 2 1 1 16" ;;
        mali-m:mm | mali-m:mmq) echo "256 64 64 32 16 16 2 2 2 1 16" ;;
        mali-m:int | mali-m:int_k) echo "512 64 64 32 16 8 1 2 2 1 16" ;;
        mali-s:mm) echo "64 32 32 16 16 16 2 2 2 1 16" ;;
        mali-s:mmq) echo "64 32 32 32 16 16 2 2 2 1 16" ;;
        mali-s:int | mali-s:int_k) echo "128 32 32 32 16 8 1 2 2 1 16" ;;
        # candidates measured while choosing the patch's tiles (16 accumulators
        # for the int-dot shaders: they still spill, hence 8 in the patch)
        x-m-16:*) echo "256 64 64 32 16 16 2 2 2 1 16" ;;
        x-m-w1:*) echo "256 64 64 32 16 16 1 2 2 1 16" ;;
        x-s-16:*) echo "64 32 32 32 16 16 2 2 2 1 16" ;;
        x-s-w1:*) echo "64 32 32 32 16 16 1 2 2 1 16" ;;
        *) die "unknown tile '$1' for $2 (up-l up-m up-s mali-m mali-s x-m-16 x-m-w1 x-s-16 x-s-w1)" ;;
    esac
}
# shader -> "file family quant_type_id" (type id -1: no MmTypeA constant)
shader_file() {
    case "$1" in
        f16) echo "matmul_f16_f32_f16acc.spv mm -1" ;;
        f32) echo "matmul_f32_f32.spv mm -1" ;;
        q4_0) echo "matmul_quant_f32_f16acc.spv mmq 2" ;;
        q8_0) echo "matmul_quant_f32_f16acc.spv mmq 8" ;;
        q4_k) echo "matmul_quant_f32_f16acc.spv mmq 12" ;;
        q6_k) echo "matmul_quant_f32_f16acc.spv mmq 14" ;;
        q4_0i) echo "matmul_q4_0_q8_1.spv int -1" ;;
        q8_0i) echo "matmul_q8_0_q8_1.spv int -1" ;;
        q4_ki) echo "matmul_q4_k_q8_1.spv int_k -1" ;;
        q6_ki) echo "matmul_q6_k_q8_1.spv int_k -1" ;;
        # GGML_VK_DISABLE_F16=1 (or a device without fp16): the *_fp32 builds
        f16-fp32) echo "matmul_f16_f32_fp32.spv mm -1" ;;
        q4_0-fp32) echo "matmul_quant_f32_fp32.spv mmq 2" ;;
        q8_0-fp32) echo "matmul_quant_f32_fp32.spv mmq 8" ;;
        q4_k-fp32) echo "matmul_quant_f32_fp32.spv mmq 12" ;;
        q4_0i-fp32) echo "matmul_q4_0_q8_1_fp32.spv int -1" ;;
        q4_ki-fp32) echo "matmul_q4_k_q8_1_fp32.spv int_k -1" ;;
        *) die "unknown shader '$1' (f16 f32 q4_0 q8_0 q4_k q6_k q4_0i q8_0i q4_ki q6_ki, *-fp32)" ;;
    esac
}

for sh in "${shaders[@]}"; do
    read -r file family qtype <<<"$(shader_file "$sh")"
    [ -f "$spv_dir/$file" ] || die "no $spv_dir/$file"
    for t in "${tiles[@]}"; do
        read -r -a wt <<<"$(tile_spec "$t" "$family")"
        args=()
        for i in "${!wt[@]}"; do args+=(--spec "$i=${wt[$i]}"); done
        case "$family" in
            # ALIGNED: the pipeline ggml picks when K is tile-aligned (mul_mmq has none)
            mm | mmq) args+=(--spec 11=1) ;;
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
