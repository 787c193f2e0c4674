#!/usr/bin/env bash
# Spill table for rvl's own smoke-bench kernels on panvk (G610):
#
#   scripts/panvk-lab/rvl-kernels-report.sh [--native stock|patched] SHADER_DIR [TOKENS] [OUTPUTS] [FAMILIES]
#
# --native: the natively built Mesa 26.2 (build-mesa.sh, native-run.sh; seconds per spilling
# shader) instead of Debian's 26.1.6 under qemu (minutes); the same as PANVK_LAB_NATIVE=...
# for spill-report.sh.
#
# FAMILIES: reg (the Mali register-blocked kernels, seconds each), peak (the
# peak-FLOPS loops), probe (probe_spill.comp, built to spill at NACC=128 and not at 8),
# tiled (the shared-memory and llama.cpp-like tiles: these spill by design on
# Mali and take minutes each under qemu); default reg,peak,probe,tiled.
#
# SHADER_DIR holds the bench's SPIR-V (src/bench/shaders/*.spv). The kernel list
# and specialisation constants mirror src/bench/kernels/catalogue.rs catalogue():
#   reg-TMxTN  (gemm_reg_f32/_f16, gemm_int8, gemm_q4_0): spec {wx, wy, TM, TN[, KCHUNK=8 for fp16]},
#              workgroup wx x wy, grid (ceil(N/(wx*TN)), ceil(M/(wy*TM)))
#   tiled-*    (gemm_tiled_{f32,f16,q4_0}.spv and their _peeled/_splitk forms, and the
#              int8-dot gemm_tiled_int8/_splitk_int8 with BK = 32, one block): spec
#              {threads, BM, BN, BK, TM, TN, SPLIT}, grid (ceil(M/BM), ceil(N/BN), SPLIT).
#              The shapes of kernels/catalogue.rs low_precision_tiles, for each of fp32, fp16
#              and q4_0 (the fp32 catalogue's own tiles, small-grid ones included, are among
#              them), its int8_tiles, and llama-64x64/128x128 (fp32). The -splitcu variants are
#              the _splitk build with a split chosen per shape from the compute-unit count, which
#              the lab does not have: no row. Not Mali kernels (kernels/support.rs skips every
#              non-llama tile there); the rows record what they would cost.
# Default shape: M = 512 tokens, N = 4096 outputs. Rows (tab-separated):
#   kernel shader spills fills regs tls_bytes wls_bytes cmdbuf_bytes end_result compile_s
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ "${1:-}" = --native ]; then
    [ $# -ge 2 ] || die "--native needs stock or patched"
    export PANVK_LAB_NATIVE="$2"
    shift 2
fi
[ $# -ge 1 ] || die "usage: rvl-kernels-report.sh [--native stock|patched] SHADER_DIR [TOKENS] [OUTPUTS] [FAMILIES]"
dir="$1"
M="${2:-512}"
N="${3:-4096}"
families=",${4:-reg,peak,probe,tiled},"

reg() { # name file wx wy tm tn [kchunk]
    local name=$1 file=$2 wx=$3 wy=$4 tm=$5 tn=$6 kc=${7:-}
    [ -f "$dir/$file" ] || { printf '%s\t%s\tmissing\n' "$name" "$file"; return; }
    local args=(--spec "0=$wx" --spec "1=$wy" --spec "2=$tm" --spec "3=$tn")
    [ -n "$kc" ] && args+=(--spec "4=$kc")
    args+=(--groups "$(((N + wx * tn - 1) / (wx * tn))),$(((M + wy * tm - 1) / (wy * tm))),1")
    "$LAB_DIR/spill-report.sh" "$dir/$file" "${args[@]}" --row | while IFS=$'\t' read -r _ _ rest; do
        printf '%s\t%s\t%s\n' "$name" "$file" "$rest"
    done
}
tiled() { # name bm bn bk tm tn [form [precision]]; form guarded, peeled or splitN
    local name=$1 bm=$2 bn=$3 bk=$4 tm=$5 tn=$6 form=${7:-guarded} p=${8:-f32} file split=1
    case "$form" in
        guarded) file="gemm_tiled_$p.spv" ;;
        peeled) file="gemm_tiled_peeled_$p.spv" ;;
        split*) file="gemm_tiled_splitk_$p.spv" split=${form#split} ;;
        *) die "unknown tile form $form" ;;
    esac
    [ -f "$dir/$file" ] || { printf '%s\t%s\tmissing\n' "$name" "$file"; return; }
    local threads=$(((bm / tm) * (bn / tn))) out
    # The split-K build adds partial sums with atomicAdd on floats; panvk has no
    # shaderBufferFloat32AtomicAdd, and Mesa aborts compiling it (kernels/support.rs never offers
    # those there), so a failed compile is a row, not the end of the table.
    if ! out=$("$LAB_DIR/spill-report.sh" "$dir/$file" --spec "0=$threads" --spec "1=$bm" --spec "2=$bn" \
        --spec "3=$bk" --spec "4=$tm" --spec "5=$tn" --spec "6=$split" \
        --groups "$(((M + bm - 1) / bm)),$(((N + bn - 1) / bn)),$split" --row 2>/dev/null); then
        printf '%s\t%s\tcompile failed\n' "$name" "$file"
        return
    fi
    while IFS=$'\t' read -r _ _ rest; do printf '%s\t%s\t%s\n' "$name" "$file" "$rest"; done <<<"$out"
}

if [[ "$families" == *,reg,* ]]; then
# Mali runs the rows marked "mali" (0 spills); the others spill on Mali and are
# kept for GPUs with more registers (kernels/support.rs MALI_SPILLS).
reg reg-4x4 gemm_reg_f32.spv 16 4 4 4 # mali
reg reg-4x2 gemm_reg_f32.spv 16 4 4 2 # mali
reg reg-2x4 gemm_reg_f32.spv 16 4 2 4 # mali
reg reg-4x8 gemm_reg_f32.spv 8 8 4 8
reg reg-8x4 gemm_reg_f32.spv 16 4 8 4
reg reg-4x4 gemm_reg_f16.spv 16 4 4 4 8 # mali
reg reg-4x2 gemm_reg_f16.spv 16 4 4 2 8 # mali
reg reg-4x8 gemm_reg_f16.spv 8 8 4 8 8
reg reg-2x2 gemm_int8.spv 16 4 2 2 # mali
reg reg-4x1 gemm_int8.spv 16 4 4 1 # mali
reg reg-4x2 gemm_int8.spv 16 4 4 2
reg reg-4x4 gemm_int8.spv 16 4 4 4
reg reg-2x2 gemm_q4_0.spv 16 4 2 2 # mali
reg reg-4x1 gemm_q4_0.spv 16 4 4 1 # mali
reg reg-2x1 gemm_q4_0.spv 16 4 2 1 # mali
reg reg-4x2 gemm_q4_0.spv 16 4 4 2
reg reg-4x4 gemm_q4_0.spv 16 4 4 4
fi
fixed() { # name file local groups spec0
    local name=$1 file=$2 local_x=$3 groups=$4 spec0=$5 args=()
    [ -f "$dir/$file" ] || { printf '%s\t%s\tmissing\n' "$name" "$file"; return; }
    args=(--spec "0=$spec0" --groups "$groups,1,1")
    "$LAB_DIR/spill-report.sh" "$dir/$file" "${args[@]}" --row |
        while IFS=$'\t' read -r _ _ rest; do printf '%s\t%s\t%s\n' "$name" "$file" "$rest"; done
    : "$local_x"
}
if [[ "$families" == *,peak,* ]]; then
    # src/bench/peak.rs: spec {LOCAL}, workgroup LOCAL, 16384 groups on a GPU
    fixed peak-fp32 peak_f32.spv 256 16384 256
    fixed peak-fp16 peak_f16.spv 256 16384 256
    fixed peak-int8 peak_int8.spv 256 16384 256
fi
if [[ "$families" == *,probe,* ]]; then
    # src/bench/probe.rs: spec {NACC}, 128 invocations (literal), GROUPS workgroups
    fixed probe-spill-128 probe_spill.spv 128 86 128
    fixed probe-spill-8 probe_spill.spv 128 86 8
fi
if [[ "$families" == *,tiled,* ]]; then
# kernels/catalogue.rs low_precision_tiles, in its order: name bm bn bk tm tn form.
tiles=(
    "tiled-128x128 128 128 16 8 8 guarded"
    "tiled-64x128 64 128 16 8 8 guarded"
    "tiled-128x64 128 64 16 8 8 guarded"
    "tiled-64x64 64 64 16 4 8 guarded"
    "tiled-32x128 32 128 16 4 8 guarded"
    "tiled-128x128-k8-peeled 128 128 8 8 8 peeled"
    "tiled-64x128-k8-peeled 64 128 8 8 8 peeled"
    "tiled-128x64-split2 128 64 16 8 8 split2"
    "tiled-64x128-split2 64 128 16 8 8 split2"
    "tiled-64x128-split4 64 128 16 8 8 split4"
    "tiled-64x64-split4 64 64 16 4 8 split4"
    "tiled-32x128-split4 32 128 16 4 8 split4"
    "tiled-32x128-split8 32 128 16 4 8 split8"
    "tiled-16x128-split4 16 128 16 4 8 split4"
    "tiled-16x128-split8 16 128 16 4 8 split8"
)
for p in f32 f16 q4_0; do
    for t in "${tiles[@]}"; do
        read -r name bm bn bk tm tn form <<<"$t"
        tiled "$name-$p" "$bm" "$bn" "$bk" "$tm" "$tn" "$form" "$p"
    done
done
# kernels/catalogue.rs int8_tiles (gemm_tiled_int8.comp has no peeled form).
for t in "tiled-128x128 128 128 32 8 8 guarded" "tiled-64x128 64 128 32 8 8 guarded" \
    "tiled-64x64 64 64 32 4 8 guarded" "tiled-32x128 32 128 32 4 8 guarded" \
    "tiled-64x128-split4 64 128 32 8 8 split4" "tiled-32x128-split8 32 128 32 4 8 split8"; do
    read -r name bm bn bk tm tn form <<<"$t"
    tiled "$name-int8" "$bm" "$bn" "$bk" "$tm" "$tn" "$form" int8
done
# kernels/catalogue.rs fp16_shared_tiles (gemm_tiled.comp -DF16 -DSHARED_F16:
# gemm_tiled*_f16s.spv).
for t in "tiled-128x128 128 128 16 8 8 guarded" "tiled-64x64 64 64 16 4 8 guarded" \
    "tiled-128x128-k32 128 128 32 8 8 guarded" "tiled-128x128-k8-peeled 128 128 8 8 8 peeled" \
    "tiled-128x64-split2 128 64 16 8 8 split2" "tiled-64x128-split4 64 128 16 8 8 split4" \
    "tiled-64x64-split4 64 64 16 4 8 split4" "tiled-64x64-k32-split4 64 64 32 4 8 split4" \
    "tiled-32x128-split8 32 128 16 4 8 split8"; do
    read -r name bm bn bk tm tn form <<<"$t"
    tiled "$name-smem16" "$bm" "$bn" "$bk" "$tm" "$tn" "$form" f16s
done
tiled llama-64x64 64 64 16 4 8
tiled llama-128x128 128 128 8 8 16
fi
