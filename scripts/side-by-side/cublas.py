#!/usr/bin/env python3
"""cuBLAS SGEMM (TF32 off) at Qwen2.5-3B's linear-layer shapes, through PyTorch, for issue 15's
side-by-side. C[ub, n] = X[ub, k] @ W[n, k]^T, the layout rvl and ggml use. Prints one JSON
document: {"torch", "device", "rows": [{"gemm", "k", "n", "ubatch", "seconds", "tflops"}]}.
Timing: CUDA events over 50 products, best mean of 5 such runs, after 10 warm-ups."""
import json
import sys

import torch

SHAPES = [("qkv", 2048, 2560), ("o", 2048, 2048), ("gate", 2048, 11008), ("down", 11008, 2048)]
UBATCHES = [16, 64, 128, 512]


def time_product(x, w, reps=50, runs=5):
    for _ in range(10):
        torch.matmul(x, w.t())
    best = float("inf")
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            torch.matmul(x, w.t())
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / reps)
    return best


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda")
    rows = []
    for name, k, n in SHAPES:
        w = torch.randn(n, k, device=dev, dtype=torch.float32)
        for ub in UBATCHES:
            x = torch.randn(ub, k, device=dev, dtype=torch.float32)
            s = time_product(x, w)
            rows.append({"gemm": name, "k": k, "n": n, "ubatch": ub, "seconds": s,
                         "tflops": 2.0 * ub * n * k / s / 1e12})
    json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
               "allow_tf32": torch.backends.cuda.matmul.allow_tf32, "rows": rows}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
