#!/usr/bin/env python3
"""Issue 15's side-by-side table from one device session's outputs (bundle.sh's run.sh OUT):

    table.py OUT

OUT/rvl-*.json: `rvl smoke-bench --full --no-cpu --json`, one per precision; per GEMM and ubatch
rvl's figure is its best correct screen (the kernel it would pick, measured alone, as
test-backend-ops measures ggml's).
OUT/test-backend-ops.txt: `RVL_QWEN_CASES=1 test-backend-ops perf -o MUL_MAT -b Vulkan0` output.
OUT/cublas.json: cublas.py's output (fp32 only, TF32 off), if present. Prints Markdown."""
import glob
import json
import os
import re
import sys

GEMMS = {(2560, 2048): "qkv", (2048, 2048): "o", (11008, 2048): "gate", (2048, 11008): "down"}
ORDER = ["qkv", "o", "gate", "down"]
TYPES = {"f32": "fp32", "f16": "fp16", "q4_0": "q4_0"}
LINE = re.compile(r"MUL_MAT\(type_a=(\w+),type_b=f32,m=(\d+),n=(\d+),k=(\d+),.*?([\d.]+) us/run")


def llama_rates(path):
    rates = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = LINE.search(re.sub(r"\x1b\[[0-9;]*m", "", line))
            if not m or m.group(1) not in TYPES:
                continue
            rows, ub, k, us = int(m.group(2)), int(m.group(3)), int(m.group(4)), float(m.group(5))
            gemm = GEMMS.get((rows, k))
            if gemm:
                rates[(TYPES[m.group(1)], ub, gemm)] = 2.0 * rows * ub * k / (us * 1e-6) / 1e9
    return rates


def rvl_rates(docs):
    best, stacks = {}, {}
    for u in (u for doc in docs for u in doc["ubatches"]):
        for s in u["screens"]:
            if s.get("status") != "ok" or s.get("gflops") is None:
                continue
            key = (s["precision"], u["ubatch"], s["gemm"])
            if key not in best or s["gflops"] > best[key][0]:
                best[key] = (s["gflops"], s["kernel"])
        for st in u.get("stacks", []):
            if st.get("label") == "best" and st.get("status") == "ok":
                stacks[(st["precision"], u["ubatch"])] = st["gflops"]
    return best, stacks


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    docs = []
    for path in sorted(glob.glob(os.path.join(out, "rvl-*.json"))):
        try:
            docs.append(json.load(open(path)))
        except ValueError:
            print(f"(skipped {path}: not a complete JSON document)", file=sys.stderr)
    if not docs:
        sys.exit(f"no rvl-*.json in {out}")
    doc = docs[0]
    llama = llama_rates(os.path.join(out, "test-backend-ops.txt"))
    cublas = {}
    if os.path.exists(os.path.join(out, "cublas.json")):
        for r in json.load(open(os.path.join(out, "cublas.json")))["rows"]:
            cublas[(r["ubatch"], r["gemm"])] = r["tflops"] * 1e3
    best, stacks = rvl_rates(docs)
    peaks = {p["precision"]: p["gflops"] for d in docs for p in d.get("peak", [])}
    ubs = sorted({u["ubatch"] for d in docs for u in d["ubatches"]})
    print(f"device: {doc['device']['name']} ({doc['device']['driver_info']})\n")
    for prec in ["fp32", "fp16", "q4_0", "int8"]:
        if not any(k[0] == prec for k in best):
            continue
        what = "rvl only (TOP/s): ggml's MUL_MAT has no int8 x int8 case" if prec == "int8" else "rvl / llama.cpp test-backend-ops (TFLOP/s, ratio)"
        print(f"### {prec}: {what}\n")
        print("| ubatch | " + " | ".join(ORDER) + " | rvl stack |")
        print("|---:|" + "---|" * len(ORDER) + "---:|")
        for ub in ubs:
            cells = []
            for g in ORDER:
                r, l = best.get((prec, ub, g)), llama.get((prec, ub, g))
                if r is None:
                    cells.append("n/a")
                    continue
                if l is None:
                    cells.append(f"{r[0]/1e3:.3g} ({r[1]})")
                    continue
                cells.append(f"{r[0]/1e3:.3g} / {l/1e3:.3g} = **{r[0]/l:.2f}** ({r[1]})")
            st = stacks.get((prec, ub))
            cells.append(f"{st/1e3:.1f}" if st else "n/a")
            print(f"| {ub} | " + " | ".join(cells) + " |")
        print()
    if cublas:
        print("### fp32: rvl / cuBLAS SGEMM, TF32 off (TFLOP/s, ratio)\n")
        print("| ubatch | " + " | ".join(ORDER) + " |")
        print("|---:|" + "---|" * len(ORDER))
        for ub in ubs:
            cells = []
            for g in ORDER:
                r, c = best.get(("fp32", ub, g)), cublas.get((ub, g))
                cells.append("n/a" if r is None or c is None else f"{r[0]/1e3:.3g} / {c/1e3:.3g} = **{r[0]/c:.2f}**")
            print(f"| {ub} | " + " | ".join(cells) + " |")
        print()
    for prec, pk in sorted(peaks.items()):
        st = stacks.get((prec, max(ubs)))
        if st:
            print(f"- {prec} stack at ubatch {max(ubs)}: {st/1e3:.1f} TFLOP/s = {100*st/pk:.0f} % of the measured peak {pk/1e3:.1f}")


if __name__ == "__main__":
    main()
