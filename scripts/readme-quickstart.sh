#!/usr/bin/env bash
# Run every command of README.md's quick start block as written, so the README cannot rot.
# `cargo test` lines are left to the caller (.ci/run runs the tests itself, with its settings).
# A command may exit 0, or 1 where it is the doctor's "a check failed"; anything else fails.
set -euo pipefail
cd "$(dirname "$0")/.."

block=$(awk '/<!-- section:quickstart -->/{on=1} /<!-- \/section:quickstart -->/{on=0}
    on && /^```sh/{code=1; next} on && /^```/{code=0} code' README.md)
[ -n "$block" ] || { echo "readme-quickstart: no sh block in the quick start section" >&2; exit 1; }

ran=0
while IFS= read -r line; do
    case "$line" in '' | '#'*) continue ;; 'cargo test'*) continue ;; esac
    echo "== $line"
    status=0
    bash -c "$line" >/tmp/quickstart.out 2>&1 || status=$?
    tail -n 5 /tmp/quickstart.out
    case "$status:$line" in
    0:*) ;;
    1:*" doctor"*) echo "(exit 1: the doctor found problems, as documented)" ;;
    *) echo "readme-quickstart: '$line' exited $status" >&2; exit 1 ;;
    esac
    ran=$((ran + 1))
done <<<"$block"
echo "readme-quickstart: $ran commands ran"
