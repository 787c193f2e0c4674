#!/usr/bin/env bash
# Cheap CI check for the panvk lab and the llama.cpp patch series (no
# downloads, no qemu): shell syntax, the C logger compiles, the series file
# names existing patches that each touch at least one file, PIN.yaml has its
# fields. Applying the llama.cpp series needs the 76 MB pinned sdist, so it
# is not done here; the Mesa series is applied when a cached tree exists.
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

# The Mesa series (patches/mesa): every listed patch exists and is a
# git format-patch mail (From/Subject, a message body, a diff), every patch
# file is listed, and, when a cached 26.2 tree is present (MESA_TREE, else
# build-mesa.sh's stock tree), the series applies to it in order. No
# download: without a cached tree only the form is checked.
mdir="$repo/patches/mesa"
m=0
if [ -s "$mdir/series" ]; then
    touched=()
    while IFS= read -r p || [ -n "$p" ]; do
        case "$p" in '' | '#'*) continue ;; esac
        f="$mdir/$p"
        [ -f "$f" ] || fail "mesa series names $p, which does not exist"
        head -n 1 "$f" | grep -q '^From [0-9a-f]\{40\} ' || fail "$p is not a git format-patch mail"
        grep -q '^Subject: \[PATCH' "$f" || fail "$p has no Subject"
        # a message body: some text between the Subject header block and the '---' line
        body=$(awk '/^Subject:/ { s = 1; next } s && /^$/ { b = 1; next } b && /^---$/ { exit } b && NF { n++ } END { print n + 0 }' "$f")
        [ "$body" -ge 3 ] || fail "$p has no commit message body (what, why, how measured)"
        grep -q '^+++ b/' "$f" || fail "$p has no file changes"
        while read -r t; do touched+=("$t"); done < <(sed -n 's|^--- a/||p; s|^+++ b/||p' "$f" | grep -v '^/dev/null$')
        m=$((m + 1))
    done <"$mdir/series"
    for f in "$mdir"/*.patch; do
        [ -e "$f" ] || continue
        grep -qxF "$(basename "$f")" "$mdir/series" || fail "$(basename "$f") is not listed in patches/mesa/series"
    done
    tree="${MESA_TREE:-${MESA_LAB:-/work/mesa-lab}/chroot/lab/src-stock}"
    if [ -f "$tree/VERSION" ] && command -v git >/dev/null 2>&1; then
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        for t in $(printf '%s\n' "${touched[@]}" | sort -u); do
            [ -f "$tree/$t" ] || continue   # created by the series
            mkdir -p "$tmp/$(dirname "$t")"
            cp "$tree/$t" "$tmp/$t"
        done
        # A tree still at plain rc1 (no 26.2.4 backports in its .lab-tree stamp) gets them first,
        # as build-mesa.sh does.
        bp="$repo/scripts/panvk-lab/mesa-rc1-26.2.4-backports.patch"
        if [ -f "$tree/.lab-tree" ] && ! grep -q backports "$tree/.lab-tree" && [ -z "${MESA_TREE:-}" ]; then
            for t in $(grep '^diff --git' "$bp" | awk '{print substr($3, 3)}'); do
                mkdir -p "$tmp/$(dirname "$t")"
                cp "$tree/$t" "$tmp/$t"
            done
            (cd "$tmp" && git apply --whitespace=nowarn "$bp") || fail "the 26.2.4 backports do not apply to $tree"
        fi
        while IFS= read -r p || [ -n "$p" ]; do
            case "$p" in '' | '#'*) continue ;; esac
            (cd "$tmp" && git apply --whitespace=nowarn "$mdir/$p") ||
                fail "mesa patch $p does not apply to $tree ($(cat "$tree/VERSION"))"
        done <"$mdir/series"
        echo "panvk-lab check: mesa series ($m patches) applies to $tree ($(cat "$tree/VERSION"))"
    fi
fi
echo "panvk-lab check: $n llama.cpp patches, $m mesa patches in series, scripts OK"
