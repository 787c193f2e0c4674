#!/usr/bin/env bash
# CI check of the Debian package: build it, inspect its metadata and contents, unpack it into
# a scratch root and run the *installed* binary: doctor on a fixture, the man page, the bash
# completion. Usage: scripts/check-deb.sh [--arm64]   (arm64 runs the binary under
# qemu-aarch64-static when that is installed, and otherwise only inspects the package).
set -euo pipefail
cd "$(dirname "$0")/.."

deb=$(DEBFULLNAME="rvl CI" DEBEMAIL="ci@rvl.invalid" scripts/build-deb.sh "$@" | tail -n 1)
echo "== $deb"
fail() { echo "check-deb: $*" >&2; exit 1; }

info=$(dpkg-deb -I "$deb")
want_arch=$(dpkg --print-architecture)
[ "${1:-}" = --arm64 ] && want_arch=arm64
for field in "Package: rvl" "Architecture: $want_arch" "Section: utils" "libvulkan1" "Recommends: u-boot-menu" \
    "Maintainer: rvl CI <ci@rvl.invalid>"; do
    grep -qF "$field" <<<"$info" || fail "control lacks '$field'"
done

contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/rvl ./usr/share/man/man1/rvl.1.gz \
    ./usr/share/bash-completion/completions/rvl ./usr/share/zsh/vendor-completions/_rvl \
    ./usr/share/fish/vendor_completions.d/rvl.fish ./usr/share/doc/rvl/README.md \
    ./usr/share/doc/rvl/copyright; do
    grep -qF " $path" <<<"$contents" || fail "package lacks $path"
done
# Profiles and manifest are built into the binary: no copies it would never read.
if grep -qF " ./usr/share/rvl/" <<<"$contents"; then fail "package ships /usr/share/rvl, which rvl never reads"; fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
dpkg -x "$deb" "$scratch"
run=("$scratch/usr/bin/rvl")
if [ "$want_arch" != "$(dpkg --print-architecture)" ]; then
    if ! command -v qemu-aarch64-static >/dev/null; then
        echo "check-deb: qemu-aarch64-static absent: the arm64 binary was inspected, not run"
        exit 0
    fi
    run=(qemu-aarch64-static "${run[@]}")
fi

echo "== installed rvl doctor on the boltzmann-mainline fixture"
out=$("${run[@]}" doctor --root tests/fixtures/roots/boltzmann-mainline --no-vulkan --json) || true
grep -q '"command": *"doctor"' <<<"$out" || fail "installed doctor gave no envelope: $out"
grep -q '"id": *"board"' <<<"$out" || fail "installed doctor ran no board check"

echo "== the binary is stripped"
if command -v readelf >/dev/null; then
    readelf -S "$scratch/usr/bin/rvl" | grep -qE '\.(symtab|debug_info)' && fail "usr/bin/rvl is not stripped"
fi

echo "== man page renders"
if command -v man >/dev/null; then
    page=$(MANWIDTH=80 man -l "$scratch/usr/share/man/man1/rvl.1.gz")
    for section in EXAMPLES FILES ENVIRONMENT "EXIT STATUS" "SEE ALSO"; do
        grep -q "^$section" <<<"$page" || fail "man page lacks $section (or does not render)"
    done
else
    zcat "$scratch/usr/share/man/man1/rvl.1.gz" | grep -q '^\.TH' || fail "man page has no .TH"
fi

echo "== bash completion completes the verbs"
verbs=$(bash -c "source '$scratch/usr/share/bash-completion/completions/rvl'; COMP_WORDS=(rvl ''); COMP_CWORD=1; _rvl rvl '' rvl; printf '%s\n' \"\${COMPREPLY[@]}\"")
for v in doctor setup smoke-bench; do grep -qx "$v" <<<"$verbs" || fail "bash completion lacks $v"; done
echo "check-deb: ok"
