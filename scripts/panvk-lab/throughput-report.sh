#!/usr/bin/env bash
# Compiler-side throughput model for the Mali-G610 MC4 from Mesa's Valhall compiler
# (native lab build, docs/panvk-lab.md "Throughput model"):
#
#   scripts/panvk-lab/throughput-report.sh [--patched|--variant NAME] [--vkpeak DIR] [--ggml DIR]... [--only REGEX] [--rust] [--loop]
#
# For rvl's peak loops and Mali GEMM kernels, the two llama-like tiles Mali runs (with --vkpeak, vkpeak's fp32/fp16/int8 loops
# compiled by hand into DIR/vkpeak_*.spv; with --ggml, llama.cpp's mul_mm f16/f32/q4_0 pipelines
# and its int-dot mul_mmq q4_0 (q4_0i) with the patched Mali tiles mali-m/mali-s, each taken from
# the first DIR that has it: ggml's vulkan-shaders.spv, and for q4_0i an int-dot build, see the
# doc), it compiles each pipeline with
# BIFROST_MESA_DEBUG=shaderdb,shaders and prints one table row:
#   - Mesa's whole-shader unit cycles (VK_KHR_pipeline_executable_properties: FMA, CVT, SFU,
#     ALU, Load/store) and the floor rvl smoke-bench shows from them (whole shader charged to
#     one loop iteration);
#   - the innermost loop's body, counted from the final disassembly (the instructions from a
#     backward BRANCHZ's target to the branch, each opcode's unit from Valhall's ISA.xml; for
#     ggml's rows the shortest loop holding the most FMA-unit words, since mul_mmq's runtime-
#     bounded shared-memory load loops are shorter than its arithmetic loop):
#     FMA/CVT/SFU result words and load/store instructions per thread;
#   - GFLOP/s = FLOPs per thread per iteration / loop ALU cycles x 4 cores x 1 GHz, with
#     ALU cycles = (FMA + CVT) / 64 + SFU / 16 / 4 (G610 rates, v10 issues one at a time).
# Rows are cached like spill-report.sh's (key: shader, arguments, driver build, harness).
# The harness runs rvl's and vkpeak's rows with --no-robust: rvl's device leaves
# robustBufferAccess off, and with it on Mesa adds bounds checks to each buffer access (other
# code, other counts). ggml's rows keep it on, as ggml does (it enables every feature the device
# reports, and its mul_mm pipelines do not opt out through VK_EXT_pipeline_robustness).
# --rust prints the rvl rows as src/bench/throughput.rs LAB_LOOPS entries instead.
# --loop prints, after each row, the counted loop body: one instruction a line with its unit.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
variant=stock
vkpeak=""
ggml=()
only="."
rust=0
loop=0
while [ $# -gt 0 ]; do
    case "$1" in
        --patched) variant=patched; shift ;;
        --variant) variant="$2"; shift 2 ;;
        --vkpeak) vkpeak="$2"; shift 2 ;;
        --ggml) ggml+=("$2"); shift 2 ;;
        --only) only="$2"; shift 2 ;;
        --rust) rust=1; shift ;;
        --loop) loop=1; shift ;;
        *) die "usage: throughput-report.sh [--patched|--variant NAME] [--vkpeak DIR] [--ggml DIR]... [--only REGEX] [--rust] [--loop]" ;;
    esac
done
MESA_LAB="${MESA_LAB:-/work/mesa-lab}"
isa="$MESA_LAB/chroot/lab/src-$variant/src/panfrost/compiler/bifrost/valhall/ISA.xml"
so="$MESA_LAB/chroot/lab/build-$variant/src/panfrost/vulkan/libvulkan_panfrost.so"
[ -f "$so" ] && [ -f "$isa" ] || die "no native $variant build in $MESA_LAB (build-mesa.sh)"
S="$LAB_DIR/../../src/bench/shaders"
CACHE="$(lab_cache_dir)/throughput"
mkdir -p "$CACHE"
driver="$(sha256sum <"$so" | cut -c1-16)"

# name|shader|flops per thread per loop iteration|peak GFLOP/s of its arithmetic|harness args
rows=(
    "peak-fp32|$S/peak_f32.spv|256|512|--spec 0=256 --groups 16384,1,1 --no-robust"
    "peak-fp16|$S/peak_f16.spv|256|1024|--spec 0=256 --groups 16384,1,1 --no-robust"
    "peak-int8|$S/peak_int8.spv|1024|2048|--spec 0=256 --groups 16384,1,1 --no-robust"
)
# The Mali rows of src/bench/kernels/catalogue.rs (0 spills), M = 512 tokens, N = 4096 outputs;
# work per loop iteration as KernelSpec::flops_per_iteration counts it.
reg() { # name shader tm tn flops_per_output peak [kchunk]
    local extra=""
    [ -n "${7:-}" ] && extra=" --spec 4=$7"
    rows+=("$1|$S/$2|$(($5 * $3 * $4))|$6|--spec 0=16 --spec 1=4 --spec 2=$3 --spec 3=$4$extra --groups $((4096 / (16 * $4))),$((512 / (4 * $3))),1 --no-robust")
}
reg fp32-reg-4x4 gemm_reg_f32.spv 4 4 8 512
reg fp32-reg-4x2 gemm_reg_f32.spv 4 2 8 512
reg fp32-reg-2x4 gemm_reg_f32.spv 2 4 8 512
reg fp16-reg-4x4 gemm_reg_f16.spv 4 4 8 1024 8
reg fp16-reg-4x2 gemm_reg_f16.spv 4 2 8 1024 8
reg int8-reg-2x2 gemm_int8.spv 2 2 64 2048
reg int8-reg-4x1 gemm_int8.spv 4 1 64 2048
reg q4_0-reg-2x2 gemm_q4_0.spv 2 2 64 512
reg q4_0-reg-4x1 gemm_q4_0.spv 4 1 64 512
reg q4_0-reg-2x1 gemm_q4_0.spv 2 1 64 512
# llama.cpp's two tile shapes in rvl's fp32 tiled kernel (kernels/catalogue.rs llama_like: they
# run on Mali, spilling, to reproduce what upstream llama.cpp meets). One loop iteration is one BK
# step of K (gemm_tiled.comp: the kk loop over BK is unrolled), TM x TN outputs per thread:
# FLOP/iter = 2 * BK * TM * TN. Spec {threads, BM, BN, BK, TM, TN, SPLIT}, grid (M/BM, N/BN).
tile() { # name bm bn bk tm tn
    rows+=("$1|$S/gemm_tiled_f32.spv|$((2 * $4 * $5 * $6))|512|--spec 0=$(($2 / $5 * $3 / $6)) --spec 1=$2 --spec 2=$3 --spec 3=$4 --spec 4=$5 --spec 5=$6 --spec 6=1 --groups $((512 / $2)),$((4096 / $3)),1 --no-robust")
}
tile llama-64x64 64 64 16 4 8
tile llama-128x128 128 128 8 8 16
if [ -n "$vkpeak" ]; then
    # vkpeak: 16 FMAs (or dot products) per iteration, one chain (p1/p4) or two (dual);
    # workgroup = the subgroup (16 on Mali, spec id 233 here); loop count a spec constant.
    for v in fp32_p1:32:512 fp32_p1_dual:32:512 fp32_p4:128:512 fp32_p4_dual:128:512 \
        fp16_p1:32:1024 fp16_p4:128:1024 fp16_p4_dual:128:1024 int8_p4:128:2048 int8_p4_dual:128:2048; do
        IFS=: read -r n f pk <<<"$v"
        rows+=("vkpeak-$n|$vkpeak/vkpeak_$n.spv|$f|$pk|--spec 0=4096 --spec 233=16 --groups 4096,1,1 --no-robust")
    done
fi
if [ "${#ggml[@]}" -gt 0 ]; then
    # llama.cpp's mul_mm (patches/llama.cpp 0001's Mali tiles; ggml-tiles.sh has the warptiles)
    # at M = 4096 weight rows, ubatch 512: the aligned pipeline (spec 11) ggml picks when K is a
    # multiple of the tile's K step, fp16 maths (f16acc) for f16 and q4_0 as ggml chooses on an
    # fp16 device, fp32 accumulators for f32 (its shared memory holds fp16 even so).
    # One loop iteration is one BK step of K: each thread owns WMITER*TM * WNITER*TN = WM*WN/WARP
    # outputs (WNITER = WM*WN / (WARP*TM*TN*WMITER), mul_mm.comp) and does BK multiply-adds into
    # each: FLOP/iter = 2 * BK * WM*WN/WARP. BK is the warptile's for q4_0; the float shaders of
    # the pinned tree define BK 32 themselves (mul_mm.comp: constant 3 unused for DATA_A_F16/F32).
    # q4_0i (mul_mmq.comp, int-dot, fp32 accumulators): its loop steps K by BK * BK_STEP = 32 * 4
    # (both defined in the shader), so FLOP/iter = 2 * 128 * WM*WN/WARP (ops of IDPADD.v4s8).
    . "$LAB_DIR/ggml-tiles.sh"
    # mf*/mq*: patches/llama.cpp 0003's mul_mm_mali.comp (families mali16/mali32): one loop
    # iteration is one BK = 32 step; each thread owns TM x TN = 8 x 8 (fp16 accumulators) or
    # 8 x 4 (fp32) outputs: FLOP/iter = 2 * BK * TM * TN.
    for sh in f16 f32 q4_0 q8_0 q4_k q6_k q4_0i mf16 mf16-f32acc mf16b mf32 mq4_0 mq8_0 mq4_k mq6_k mq4_0-f32acc mq4_k-f32acc mi4_0 mi8_0 mi4_k mi6_k; do
        read -r file family qtype <<<"$(shader_file "$sh")"
        dir=""
        # the first DIR with a real build of it (ggml's generator leaves 4-byte placeholders
        # under glslc-*.sh's GLSLC_ONLY)
        for d in "${ggml[@]}"; do
            if [ "$(stat -c %s "$d/$file" 2>/dev/null || echo 0)" -gt 4 ]; then dir=$d; break; fi
        done
        [ -n "$dir" ] || continue
        pk=1024
        [ "$sh" = f32 ] && pk=512
        [ "$sh" = q4_0i ] && pk=2048
        [ "$family" = mali32 ] && pk=512
        [ "$family" = maliint ] && pk=2048
        for t in mali-m mali-s; do
            read -r -a wt <<<"$(tile_spec "$t" "$family")"
            bk=${wt[3]}
            [ "$family" = mm ] && bk=32
            [ "$family" = int ] && bk=128
            a=""
            for i in "${!wt[@]}"; do a+="--spec $i=${wt[$i]} "; done
            # ALIGNED (mul_mmq has none)
            case "$family" in int | maliint) ;; *) a+="--spec 11=1 " ;; esac
            # maliint: ggml creates it without robustness (VK_EXT_pipeline_robustness, llama.cpp
            # patch 0016: its tiles live in a storage buffer, whose robust stores Mesa lowers with a
            # bounds check and a branch each)
            [ "$family" = maliint ] && a+="--no-robust "
            [ "$qtype" -ge 0 ] && a+="--spec 12=$qtype "
            flop=$((2 * bk * wt[4] * wt[5] / wt[10]))
            case "$family" in mali16 | mali32 | maliint) flop=$((2 * bk * wt[7] * wt[8])) ;; esac
            rows+=("ggml-$sh-$t|$dir/$file|$flop|$pk|$a--groups $((4096 / wt[1])),$((512 / wt[2])),1")
        done
    done
fi

flag=()
[ "$variant" = stock ] || flag=(--variant "$variant")
[ "$rust" = 1 ] || printf '| kernel | FLOP/iter | Mesa FMA / CVT / SFU / ALU / LS (whole shader) | smoke-bench floor GFLOP/s | loop body: FMA / CVT / SFU words, LS instr | loop ALU cycles | predicted GFLOP/s | of peak | regs, threads, spills:fills |\n'
[ "$rust" = 1 ] || printf '|---|---|---|---|---|---|---|---|---|\n'
for r in "${rows[@]}"; do
    IFS='|' read -r name shader flops peak args <<<"$r"
    [[ "$name" =~ $only ]] || continue
    [ -f "$shader" ] || { echo "| $name | missing $shader |"; continue; }
    # shellcheck disable=SC2086
    key=$( { sha256sum <"$shader"; echo "$args $driver"; sha256sum <"$LAB_DIR/spill_harness.c"; } | sha256sum | cut -c1-24)
    if [ ! -f "$CACHE/$key.out" ]; then
        # shellcheck disable=SC2086
        # No statsfull: its shortest-path walk (va_gather_min_path_stats) visits every path
        # through the CFG, exponential in the branches; ggml's bounds-checked loads have
        # hundreds (a mali-m f16 compile ran 10 minutes in it and did not end). Nothing here
        # reads its figures.
        LAB_ENV="BIFROST_MESA_DEBUG=shaderdb,shaders" \
            "$LAB_DIR/native-run.sh" "${flag[@]+"${flag[@]}"}" spill_harness "$shader" $args \
            >"$CACHE/$key.tmp" 2>"$CACHE/$key.err" || die "harness failed on $name (see $CACHE/$key.err)"
        mv "$CACHE/$key.tmp" "$CACHE/$key.out"
    fi
    python3 - "$isa" "$CACHE/$key.out" "$CACHE/$key.err" "$name" "$flops" "$peak" "$rust" "$loop" <<'EOF'
import re, sys
isa, out, err, name, flops, peak, rust, loop = sys.argv[1:]
flops, peak = float(flops), float(peak)
# Opcode -> unit, from ISA.xml: an <ins> names its own unit or inherits its <group>'s.
unit = {}
group = None
for line in open(isa):
    g = re.search(r'<group name="([^"]+)"[^>]*?unit="([A-Z]+)"', line)
    if g:
        group = g.group(2); unit[g.group(1)] = group; continue
    if '</group>' in line:
        group = None; continue
    i = re.search(r'<ins name="([^"]+)"([^>]*)>', line)
    if i:
        u = re.search(r'unit="([A-Z]+)"', i.group(2))
        unit[i.group(1)] = u.group(1) if u else group
def unit_of(op):
    parts = op.split('.')
    for k in range(len(parts), 0, -1):
        u = unit.get('.'.join(parts[:k]))
        if u:
            return u
    return None
stats = {}
for line in open(out):
    if line.startswith('stat.'):
        k, v = line[5:].strip().split('=', 1)
        stats[k] = float(v)
# The final disassembly: the indented lines after the last IR print, up to the statistics.
text = open(err).read()
tail = text[text.rfind('\nblock0 {'):]
start = tail.find('\n\n   ')
dis = tail[start:] if start >= 0 else ''
ins = [l.strip() for l in dis.split('\n') if l.startswith('   ') and l.strip()]
def count(body):
    w = {'FMA': 0, 'CVT': 0, 'SFU': 0, 'LS': 0, 'T': 0, 'V': 0, 'VT': 0, 'NONE': 0}
    for l in body:
        op = l.split()[0]
        u = unit_of(op) or 'NONE'
        words = 2 if re.search(r'\.(u64|s64|f64|i64)\b', op) and u in ('FMA', 'CVT', 'SFU') else 1
        w[u] = w.get(u, 0) + words
    return w
# Loops: the ranges from a backward branch's target to the branch. The innermost one is the
# shortest; for ggml's and the llama tiles' rows, the shortest of those with the most FMA-unit words (the arithmetic
# loop, not mul_mmq's shared-memory load loops).
loops = []
for b, l in enumerate(ins):
    m = re.search(r'offset:(-\d+)', l)
    if l.startswith('BRANCH') and m:
        lo = b + int(m.group(1)) + 1
        if 0 <= lo <= b:
            loops.append((lo, b))
if name.startswith(('ggml', 'llama')) and loops:
    most = max(count(ins[lo:b + 1])['FMA'] for lo, b in loops)
    loops = [(lo, b) for lo, b in loops if count(ins[lo:b + 1])['FMA'] == most]
best = min(loops, key=lambda r: r[1] - r[0]) if loops else None
w = count(ins[best[0]:best[1] + 1] if best else [])
alu = (w['FMA'] + w['CVT']) / 64 + w['SFU'] / 16 / 4
whole = stats.get('ALU', 0)
floor = flops / max(whole, stats.get('Load/store', 0)) * 4 if whole else 0
pred = flops / alu * 4 if alu else 0
g = lambda k: '%.3g' % stats.get(k, float('nan'))
if rust == '1':
    if not name.startswith(('vkpeak', 'ggml', 'llama')):
        prec, kernel = (name.split('-')[1], name) if name.startswith('peak') else (name.split('-')[0], name.split('-', 1)[1])
        print('    LabLoop { precision: "%s", kernel: "%s", whole: [%s], loop_alu: %s },' % (
            prec, kernel, ', '.join(repr(stats.get(k, 0.0)) for k in ('FMA', 'CVT', 'SFU', 'ALU', 'Load/store')), repr(alu)))
    sys.exit(0)
print('| %s | %g | %s / %s / %s / %s / %s | %.0f | %d / %d / %d, %d | %.3f | **%.0f** | %.0f %% | %d, %s, %d:%d |' % (
    name, flops, g('FMA'), g('CVT'), g('SFU'), g('ALU'), g('Load/store'), floor,
    w['FMA'], w['CVT'], w['SFU'], w['LS'], alu, pred, 100 * pred / peak,
    stats.get('Registers_used', 0), 'full' if stats.get('Threads') == 2 else 'half',
    stats.get('Spills', 0), stats.get('Fills', 0)))
if loop == '1' and best:
    for l in ins[best[0]:best[1] + 1]:
        print('    %-4s %s' % (unit_of(l.split()[0]) or '-', l))
EOF
done
