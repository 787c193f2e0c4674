#!/usr/bin/env bash
# How panvk splits a compute dispatch into CSF tasks on the Mali-G610 MC4, as the native lab
# records it (docs/panvk-lab.md, "Task split"):
#
#   scripts/panvk-lab/task-split.sh [--variant NAME] [--vkpeak VKPEAK_CPP] [--ggml SPVDIR] [--only REGEX]
#
# Each row compiles one pipeline with spill_harness, records the dispatch, submits it under
# PANVK_DEBUG=trace (pandecode disassembles every command stream at submit; the shim executes
# nothing) and reads back what panvk emitted for it: RUN_COMPUTE's task axis and task increment,
# and the MOVE32s before it that load the workgroup size (r33, COMPUTE_SIZE_WORKGROUP) and the
# job size in workgroups (r37-r39). From those and the G610's thread properties (the shim's
# DRM_PANTHOR_DEV_QUERY answer, dumped from a G610: thread_features 0x4010000 = 4 tasks and
# 65536 registers per core, max_threads 2048, thread_max_workgroup_size 1024, shader_present
# 0x50005) it works out, by the rules Mesa's code states (below), how many workgroups go into a
# task, how many tasks there are, how many cores get work and how many threads/warps each core
# holds at once. It also applies Mesa 25.3's rule (the function before 26.0's rework) to the
# same dispatch, and checks that Mesa 26.x's rule reproduces what the lab recorded.
#
# The rules, as Mesa's sources state them (26.2 tree 3c34d70):
#   - a task is task_increment workgroups along task_axis times the whole extent of the lower
#     axes (RUN_COMPUTE; gallium's pan_csf.c sizes it "so it doesn't exceed the per-core thread
#     capacity", i.e. one task runs on one core);
#   - a core runs at most max_tasks_per_core tasks and max_threads_per_core threads at a time
#     (pan_desc.h pan_calc_workgroups_per_task: "Each shader core can run N tasks and a total of
#     M threads at any single time"), and fewer threads when the shader needs more than 32
#     registers (pan_compute_max_thread_count: 65536 registers / 64 = 1024);
#   - tasks go to the cores of the group's compute_core_mask (panvk: shader_present & the
#     pan_compute_core_mask drirc option, all set by default); panthor programs that mask as the
#     CSG's allow_compute with max_compute_cores = its popcount (panthor_sched.c).
#
#   --variant NAME  the build-NAME driver of build-mesa.sh (default stock)
#   --vkpeak FILE   nihui/vkpeak's vkpeak.cpp: its fp32 p1 shader (16 FMAs per iteration, one
#                   chain) is extracted at run time and compiled with local_size_x_id 233 = 16,
#                   the workgroup vkpeak uses on a subgroup-16 device. Without it, rvl's own
#                   peak_f32 at 16 invocations stands in (same workgroup and grid, 36 registers).
#   --ggml DIR      ggml's vulkan-shaders.spv directory (scripts/llama-vulkan/build.sh's build):
#                   the patched mali-m / mali-s tiles (ggml-tiles.sh) at real prefill grids.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
variant=stock
vkpeak=""
ggml=""
only="."
while [ $# -gt 0 ]; do
    case "$1" in
        --variant) variant="$2"; shift 2 ;;
        --patched) variant=patched; shift ;;
        --vkpeak) vkpeak="$2"; shift 2 ;;
        --ggml) ggml="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        *) die "usage: task-split.sh [--variant NAME] [--vkpeak VKPEAK_CPP] [--ggml SPVDIR] [--only REGEX]" ;;
    esac
done
MESA_LAB="${MESA_LAB:-/work/mesa-lab}"
so="$MESA_LAB/chroot/lab/build-$variant/src/panfrost/vulkan/libvulkan_panfrost.so"
[ -f "$so" ] || die "no native $variant build in $MESA_LAB (build-mesa.sh)"
S="$LAB_DIR/../../src/bench/shaders"
CACHE="$(lab_cache_dir)/task-split"
mkdir -p "$CACHE"
driver="$(sha256sum <"$so" | cut -c1-16)"

# vkpeak's p1 loop, built from the given vkpeak.cpp (never stored in this repository).
vk_spv="$S/peak_f32.spv"
vk_spec="--spec 0=16"
vk_name="peak_f32 @16 (vkpeak-shaped)"
if [ -n "$vkpeak" ]; then
    [ -f "$vkpeak" ] || die "--vkpeak: no file $vkpeak"
    need_cmd g++ g++
    need_cmd glslc glslc
    tmp="$CACHE/vkpeak.$(sha256sum <"$vkpeak" | cut -c1-12)"
    if [ ! -f "$tmp/vkpeak_p1.spv" ]; then
        mkdir -p "$tmp"
        python3 - "$vkpeak" "$tmp/gen.cpp" <<'EOF' || die "--vkpeak: no glsl_p1_data in $vkpeak"
import re, sys
src = open(sys.argv[1]).read()
defs = "\n".join(l for l in src.splitlines() if l.startswith('#define REPEAT_'))
m = re.search(r'static const char glsl_p1_data\[\] = (R"\(.*?\)");', src, re.S)
if not m or not defs:
    sys.exit(1)
open(sys.argv[2], 'w').write('#include <cstdio>\n' + defs + '\nstatic const char s[] = ' + m.group(1)
                             + ';\nint main() { fputs(s, stdout); }\n')
EOF
        g++ -o "$tmp/gen" "$tmp/gen.cpp"
        # ncnn defines afp as float without fp16 arithmetic; the workgroup comes from a spec
        # constant (vkpeak sets it to the subgroup size).
        "$tmp/gen" | sed 's/^#version 450$/#version 450\n#define afp float\nlayout(local_size_x_id = 233) in;/' >"$tmp/vkpeak_p1.comp"
        glslc --target-env=vulkan1.1 -O -fshader-stage=compute "$tmp/vkpeak_p1.comp" -o "$tmp/vkpeak_p1.spv"
    fi
    vk_spv="$tmp/vkpeak_p1.spv"
    vk_spec="--spec 0=4096 --spec 233=16"
    vk_name="vkpeak fp32 p1 @16"
fi

# name|shader|harness arguments (spec constants, grid)
rows=(
    # vkpeak: 16-invocation workgroups; its first run is 1/32 of the 128 MiB buffer's invocations
    # (1 Mi = 65536 workgroups), doubled up to 32 Mi (2 Mi workgroups) until a run takes 300 ms.
    "$vk_name, 1 Mi inv.|$vk_spv|$vk_spec --groups 65536,1,1"
    "$vk_name, 64 wg|$vk_spv|$vk_spec --groups 64,1,1"
    # rvl's peak loops (bench/peak.rs: 256 invocations, 16384 workgroups).
    "rvl peak-fp32|$S/peak_f32.spv|--spec 0=256 --groups 16384,1,1"
    "rvl peak-fp16|$S/peak_f16.spv|--spec 0=256 --groups 16384,1,1"
    "rvl peak-int8|$S/peak_int8.spv|--spec 0=256 --groups 16384,1,1"
)
if [ -n "$ggml" ]; then
    . "$LAB_DIR/ggml-tiles.sh"
    # Qwen2.5-3B prefill: FFN up/gate (11008 rows) and K/V (256 rows) at ubatch 512 with the
    # medium tile, FFN up at ubatch 32 with the small tile (ggml picks small for n <= 32).
    # ggml's grid is (ceil(m / BM), ceil(n / BN), batch) (ggml_vk_matmul, split_k 1).
    gg() { # name shader tile m n
        local file family qtype a="" wt i
        read -r file family qtype <<<"$(shader_file "$2")"
        read -r -a wt <<<"$(tile_spec "$3" "$family")"
        for i in "${!wt[@]}"; do a+="--spec $i=${wt[$i]} "; done
        [ "$family" = int ] || a+="--spec 11=1 "
        [ "$qtype" -ge 0 ] && a+="--spec 12=$qtype "
        rows+=("$1|$ggml/$file|$a--groups $(( ($4 + wt[1] - 1) / wt[1] )),$(( ($5 + wt[2] - 1) / wt[2] )),1")
    }
    gg "ggml f16 mali-m, up 11008x512" f16 mali-m 11008 512
    gg "ggml q4_0 mali-m, up 11008x512" q4_0 mali-m 11008 512
    gg "ggml q4_0 mali-m, K 256x512" q4_0 mali-m 256 512
    gg "ggml q4_0 mali-s, up 11008x32" q4_0 mali-s 11008 32
    gg "ggml q4_0 mali-s, K 256x32" q4_0 mali-s 256 32
fi

printf '| dispatch | workgroup | job size (workgroups) | regs | recorded RUN_COMPUTE (26.2) | wg per task | threads per task | tasks | cores with work | per core at once: tasks, threads (warps) of capacity | 26.x rule reproduces it | Mesa 25.3 rule: axis #inc, wg per task, tasks, cores, per core at once |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for r in "${rows[@]}"; do
    IFS='|' read -r name shader args <<<"$r"
    [[ "$name" =~ $only ]] || continue
    [ -f "$shader" ] || { echo "| $name | missing $shader |"; continue; }
    key=$( { sha256sum <"$shader"; echo "$args $driver"; sha256sum <"$LAB_DIR/spill_harness.c"; } | sha256sum | cut -c1-24)
    if [ ! -f "$CACHE/$key.out" ]; then
        # shellcheck disable=SC2086
        LAB_ENV="PANVK_DEBUG=trace PANDECODE_DUMP_FILE=stderr" \
            "$LAB_DIR/native-run.sh" --variant "$variant" spill_harness "$shader" $args --no-robust --submit \
            >"$CACHE/$key.tmp" 2>"$CACHE/$key.err" || die "harness failed on $name (see $CACHE/$key.err)"
        mv "$CACHE/$key.tmp" "$CACHE/$key.out"
    fi
    python3 - "$CACHE/$key.out" "$CACHE/$key.err" "$name" <<'EOF'
import re, sys
out, err, name = sys.argv[1:]
stats, groups = {}, None
for line in open(out):
    if line.startswith('stat.'):
        k, v = line[5:].strip().split('=', 1)
        stats[k] = float(v)
    elif line.startswith('groups.0='):
        groups = [int(x) for x in line.split('=', 1)[1].split(',')]
regs = int(stats.get('Registers_used', stats.get('Work_registers', 0)))
# The G610's thread properties as panvk reads them (panthor_kmod.c panthor_dev_query_thread_props)
# from the shim's GPU_INFO, which was dumped from a G610 (panfrost_noop.c).
MAX_WG, MAX_CORE, TASKS, REGFILE, MASK, WARP = 1024, 2048, 0x4010000 >> 24, 0x4010000 & 0x3fffff, 0x50005, 16
CORES = bin(MASK).count('1')
# pandecode's disassembly of every submitted stream: RUN_COMPUTE and the MOVE32s before it.
regs_seen, found = {}, []
for line in open(err):
    m = re.search(r'MOVE32 r(\d+), #0x([0-9A-F]+)', line)
    if m:
        regs_seen[int(m.group(1))] = int(m.group(2), 16)
        continue
    m = re.search(r'RUN_COMPUTE\.([xyz])_axis\S* #(\d+)', line)
    if m:
        wg = regs_seen.get(33)
        local = None if wg is None else [(wg & 0x3ff) + 1, ((wg >> 10) & 0x3ff) + 1, ((wg >> 20) & 0x3ff) + 1]
        job = [regs_seen.get(37), regs_seen.get(38), regs_seen.get(39)]
        found.append(('xyz'.index(m.group(1)), int(m.group(2)), local, job))
hits = [f for f in found if f[3] == groups]
if not hits:
    print(f'| {name} | no RUN_COMPUTE with job size {groups} in the trace ({len(found)} others) |')
    sys.exit(0)
axis, inc, local, job = hits[0]
threads_wg = local[0] * local[1] * local[2]
warps_wg = -(-threads_wg // WARP)
aligned = 32 if regs <= 32 else 64
max_thread_cnt = min(MAX_WG, MAX_CORE, REGFILE // aligned)
capacity = min(MAX_CORE, REGFILE // aligned)

def shape(axis, inc):
    # A task: inc workgroups along axis, the whole extent of the lower axes.
    per = inc
    for i in range(axis):
        per *= job[i]
    tasks = -(-job[axis] // inc)
    for i in range(axis + 1, 3):
        tasks *= job[i]
    cores = min(CORES, tasks)
    at_once = min(TASKS, -(-tasks // CORES))
    threads = min(at_once * per * threads_wg, capacity)
    return per, tasks, cores, at_once, threads

def rule26():
    # panvk_per_arch(calculate_task_axis_and_increment), csf/panvk_cmd_buffer.h, 26.0+.
    total = job[0] * job[1] * job[2]
    if not total:
        return 0, 1
    per_core = -(-total // CORES)
    per_task = max(1, min(-(-max_thread_cnt // TASKS) // threads_wg, per_core))
    a, i = 0, per_task
    for k in range(2):
        if i <= job[k]:
            break
        a += 1
        i //= job[k]
    return a, i

def rule25():
    # The same function up to 25.3: grown along the workgroup's own local size.
    tpt, a, i = threads_wg, 0, 0
    for k in range(3):
        if tpt * local[k] >= max_thread_cnt:
            i = max_thread_cnt // tpt
            break
        elif a == 2:
            i = local[k]
            break
        tpt *= local[k]
        a += 1
    return a, i

per, tasks, cores, at_once, threads = shape(axis, inc)
ok = 'yes' if rule26() == (axis, inc) else f'no: {"xyz"[rule26()[0]]} #{rule26()[1]}'
a5, i5 = rule25()
p5, t5, c5, o5, th5 = shape(a5, i5)
print(f'| {name} | {"x".join(map(str, local))} | {"x".join(map(str, job))} | {regs} | '
      f'{"xyz"[axis]}_axis #{inc} | {per} | {per * threads_wg} | {tasks} | {cores} of {CORES} | '
      f'{at_once}, {threads} ({threads // WARP}) of {capacity} | {ok} | '
      f'{"xyz"[a5]}_axis #{i5}, {p5}, {t5}, {c5} of {CORES}, {o5} / {th5} ({th5 // WARP}) |')
EOF
done
