#!/usr/bin/env bash
# Cheap CI check for the panvk lab and the llama.cpp patch series (no
# downloads, no qemu): shell syntax, the C logger compiles, the series file
# names existing patches that each touch at least one file, PIN.yaml has its
# fields. Applying the series needs the 76 MB pinned sdist, so it is not done here.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
fail() { printf 'panvk-lab check: %s\n' "$*" >&2; exit 1; }

for s in "$here"/*.sh; do
    bash -n "$s" || fail "syntax error in $s"
done
if command -v cc >/dev/null 2>&1; then
    cc -fsyntax-only -Wall -Wextra -Werror "$here/bolog.c" || fail "bolog.c does not compile"
fi

pdir="$repo/patches/llama.cpp"
[ -s "$pdir/series" ] || fail "missing $pdir/series"
n=0
while IFS= read -r p || [ -n "$p" ]; do
    [ -z "$p" ] && continue
    [ -f "$pdir/$p" ] || fail "series names $p, which does not exist"
    grep -q '^+++ b/' "$pdir/$p" || fail "$p has no file changes"
    n=$((n + 1))
done <"$pdir/series"
for key in filename size sha256 tree; do
    grep -q "^ *$key:" "$pdir/PIN.yaml" || fail "PIN.yaml lacks '$key'"
done
echo "panvk-lab check: $n patches in series, scripts OK"
