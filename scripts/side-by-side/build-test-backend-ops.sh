#!/usr/bin/env bash
# llama.cpp's test-backend-ops from the pinned, patched tree that scripts/llama-vulkan/build.sh
# builds and caches, with rvl's side-by-side cases added (qwen-cases.diff: Qwen2.5-3B's linear
# layers at ubatch 16/64/128/512, f32/f16/q4_0 weights; only when RVL_QWEN_CASES is set).
#
#   scripts/side-by-side/build-test-backend-ops.sh      prints the path of the built binary
#
# The cases are local to this comparison (issue 15); rvl's llama.cpp patch series does not carry
# them. The cached tree's test source is put back on every exit, so the cache stays the pinned tree.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bench="$("$here/../llama-vulkan/build.sh")"
build="$(cd "$(dirname "$bench")/.." && pwd)"
src="$(cd "$build/../src" && pwd)"
test_src="$src/tests/test-backend-ops.cpp"
bin="$build/bin/test-backend-ops"
# Built before from this diff (restoring the source after each build would otherwise rebuild it).
if [ -x "$bin" ] && [ "$bin" -nt "$here/qwen-cases.diff" ] && grep -qa RVL_QWEN_CASES "$bin"; then
    printf '%s\n' "$bin"
    exit 0
fi
saved="$(mktemp)"
cp "$test_src" "$saved"
trap 'cp "$saved" "$test_src"; rm -f "$saved"' EXIT
patch -s -p1 -d "$src" <"$here/qwen-cases.diff"
cmake -S "$src" -B "$build" -DLLAMA_BUILD_TESTS=ON >"$build/../tbo-configure.log" 2>&1
ninja -C "$build" test-backend-ops >&2
printf '%s\n' "$bin"
