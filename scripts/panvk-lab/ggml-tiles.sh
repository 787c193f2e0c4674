# ggml-vulkan's matmul warptiles and shader files as the panvk lab compiles them (sourced by
# ggml-mm-report.sh and throughput-report.sh --ggml, not executed).
# shellcheck shell=bash

# {BLOCK_SIZE, BM, BN, BK, WM, WN, WMITER, TM, TN, TK, WARP} for family
# mm (float A, BK 16), mmq (quantised A, BK 32), int (mul_mmq), int_k (mul_mmq,
# k-quants). ggml passes these as given, but the pinned tree's shaders fix some themselves:
# mul_mm.comp defines BK 32 for float A (constant 3 unused), mul_mmq.comp BK 32 x BK_STEP 4. Values: ggml-vulkan.cpp ggml_vk_load_shaders, non-coopmat branch,
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
        # patches/llama.cpp 0003's mul_mm_mali.comp: 8 x 8 thread tiles with fp16
        # accumulators (mali16), 8 x 4 with fp32 ones (mali32); the shader reads BLOCK_SIZE,
        # BM, BN and BK, TM/TN are its compile-time thread tile (listed for the FLOP count).
        mali-m:mali16) echo "64 64 64 32 64 64 1 8 8 1 16" ;;
        mali-s:mali16) echo "16 32 32 32 32 32 1 8 8 1 16" ;;
        mali-m:mali32) echo "128 64 64 32 64 64 1 8 4 1 16" ;;
        mali-s:mali32) echo "32 32 32 32 32 32 1 8 4 1 16" ;;
        # patches/llama.cpp 0011's mul_mmq_mali.comp: 4 x 4 thread tiles, int-dot, fp32 sums
        mali-m:maliint) echo "256 64 64 64 64 64 1 4 4 1 16" ;;
        mali-s:maliint) echo "64 32 32 64 32 32 1 4 4 1 16" ;;
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
        # patches/llama.cpp 0003 (mul_mm_mali.comp), what ggml runs on Mali with the series
        mf16) echo "matmul_mali_f16_f32_f16acc.spv mali16 -1" ;;
        mf16-f32acc) echo "matmul_mali_f16_f32.spv mali32 -1" ;;
        mf16b) echo "matmul_mali_f16_f16acc.spv mali16 -1" ;;
        mf32) echo "matmul_mali_f32_f32.spv mali32 -1" ;;
        mq4_0) echo "matmul_mali_quant_f32_f16acc.spv mali16 2" ;;
        mq8_0) echo "matmul_mali_quant_f32_f16acc.spv mali16 8" ;;
        mq4_k) echo "matmul_mali_quant_f32_f16acc.spv mali16 12" ;;
        mq6_k) echo "matmul_mali_quant_f32_shared_f16acc.spv mali16 14" ;;   # patch 0017: q6_K keeps its tiles in shared memory
        mq4_0-f32acc) echo "matmul_mali_quant_f32.spv mali32 2" ;;
        mq4_k-f32acc) echo "matmul_mali_quant_f32.spv mali32 12" ;;
        # patches/llama.cpp 0011 (mul_mmq_mali.comp): int-dot with q8_1 activations
        mi4_0) echo "matmul_mali_q8_1.spv maliint 2" ;;
        mi8_0) echo "matmul_mali_q8_1.spv maliint 8" ;;
        mi4_k) echo "matmul_mali_q8_1.spv maliint 12" ;;
        mi6_k) echo "matmul_mali_q8_1.spv maliint 14" ;;
        # GGML_VK_DISABLE_F16=1 (or a device without fp16): the *_fp32 builds
        f16-fp32) echo "matmul_f16_f32_fp32.spv mm -1" ;;
        q4_0-fp32) echo "matmul_quant_f32_fp32.spv mmq 2" ;;
        q8_0-fp32) echo "matmul_quant_f32_fp32.spv mmq 8" ;;
        q4_k-fp32) echo "matmul_quant_f32_fp32.spv mmq 12" ;;
        q4_0i-fp32) echo "matmul_q4_0_q8_1_fp32.spv int -1" ;;
        q4_ki-fp32) echo "matmul_q4_k_q8_1_fp32.spv int_k -1" ;;
        *) die "unknown shader '$1' (f16 f32 q4_0 q8_0 q4_k q6_k q4_0i q8_0i q4_ki q6_ki, *-fp32, mf16 mf16-f32acc mf16b mf32 mq4_0 mq8_0 mq4_k mq6_k mq4_0-f32acc mq4_k-f32acc, mi4_0 mi8_0 mi4_k mi6_k)" ;;
    esac
}
