#!/usr/bin/env bash
# Issue 24, "not slower elsewhere": llama-bench pp512 on a big NVIDIA GPU (the H200 device
# machine) with ggml's default tiles and with rvl's Mali pipelines forced
# (GGML_VK_MALI_TILES=1), for the generated q4_0 and f16 models of the stop-20 table
# (docs/panvk-lab.md: 4 layers, hidden 2048, FFN 11008, 16 heads, 468.7 M parameters).
#
#   here:            scripts/llama-vulkan/device-bundle.sh .cache/h200-mali     (the current series)
#   device machine:  scripts/llama-vulkan/mali-tiles-h200.sh .cache/h200-mali   (carry .cache/h200-mali)
#
# Writes to $OUT (default ./mali-tiles-out): one llama-bench JSON per type x tiles
# (q4_0-default.json, q4_0-mali.json, f16-default.json, f16-mali.json), their stderr, and
# summary.txt: t/s per ubatch beside the stop-20 figures. Exit 0 when every run ended; the
# summary says which forced-Mali rows fall below stop-20's default-tile figures (that is a
# finding to report, not a script failure). About 4 minutes on an H200.
set -uo pipefail
bundle="${1:?usage: mali-tiles-h200.sh BUNDLE_DIR (from device-bundle.sh)}"
[ -x "$bundle/run.sh" ] && [ -x "$bundle/llama-bench" ] || {
    echo "mali-tiles-h200: $bundle is not a device-bundle.sh bundle" >&2
    exit 2
}
bundle="$(cd "$bundle" && pwd)"
out="${OUT:-$PWD/mali-tiles-out}"
mkdir -p "$out"
export UBATCH="${UBATCH:-16,64,128,512}" REPS="${REPS:-5}"
# The build's glslc knows cooperative matrices (build.sh: sid's), so on an NVIDIA GPU ggml would
# take its coopmat/coopmat2 pipelines, and the Mali ones never run (ggml-vulkan picks them only
# without coopmat). Both switches off for every run: the scalar pipelines, as stop-20's build
# (Debian 12's glslc, no coopmat) had them, against the Mali ones; int dot stays on, so the
# forced q4_0 runs take the Mali int-dot pipeline (patch 0011).
export GGML_VK_DISABLE_COOPMAT=1 GGML_VK_DISABLE_COOPMAT2=1
shape=(--layers 4 --hidden 2048 --ffn 11008 --heads 16)
rc=0
for type in q4_0 f16; do
    for tiles in default mali; do
        SECONDS=0
        if [ "$tiles" = mali ]; then
            GGML_VK_MALI_TILES=1 "$bundle/run.sh" "${shape[@]}" --type "$type" \
                >"$out/$type-$tiles.json" 2>"$out/$type-$tiles.err"
        else
            env -u GGML_VK_MALI_TILES "$bundle/run.sh" "${shape[@]}" --type "$type" \
                >"$out/$type-$tiles.json" 2>"$out/$type-$tiles.err"
        fi
        r=$?
        echo "$type $tiles: rc $r in ${SECONDS}s" | tee -a "$out/times"
        [ "$r" = 0 ] || rc=1
    done
done
# stop-20 (docs/panvk-lab.md, H200, pinned series before issue 24): default tiles, t/s.
python3 - "$out" <<'EOF' | tee "$out/summary.txt"
import json, sys, os
out = sys.argv[1]
stop20 = {"q4_0": {16: 5100, 64: 31779, 128: 38070, 512: 37378},
          "f16": {16: 5004, 64: 30911, 128: 38562, 512: 43905}}
def rates(path):
    try:
        rows = json.load(open(path))
    except Exception as e:
        return {}, str(e)
    return {r["n_ubatch"]: r["avg_ts"] for r in rows if r.get("n_prompt")}, None
print("| type | ubatch | stop-20 default | default now | Mali forced | forced / stop-20 |")
print("|---|---:|---:|---:|---:|---:|")
below = []
for t in ("q4_0", "f16"):
    d, de = rates(os.path.join(out, t + "-default.json"))
    m, me = rates(os.path.join(out, t + "-mali.json"))
    for ub in sorted(stop20[t]):
        s = stop20[t][ub]
        dv, mv = d.get(ub), m.get(ub)
        f = lambda v: "%.0f" % v if v is not None else "-"
        ratio = "%.2f" % (mv / s) if mv else "-"
        print(f"| {t} | {ub} | {s} | {f(dv)} | {f(mv)} | {ratio} |")
        if mv is not None and mv < s:
            below.append(f"{t} ub {ub}: {mv:.0f} < {s}")
    for e in (de, me):
        if e:
            print(f"(unreadable result for {t}: {e})")
print()
print("forced Mali below stop-20: " + ("; ".join(below) if below else "none"))
EOF
exit "$rc"
