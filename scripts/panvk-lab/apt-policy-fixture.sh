#!/usr/bin/env bash
# Write the apt policy a fresh image of RELEASE would show for the packages rvl's mesa step asks
# about (tests/fixtures/apt-policy/RELEASE.txt): `apt-cache policy` with a private apt
# configuration (own sources, lists and an empty dpkg status) for that release's suites, so the
# fixtures are real archive answers, not hand-written. /etc/apt is never read nor written.
#
#   scripts/panvk-lab/apt-policy-fixture.sh RELEASE [OUT]
#   RELEASE: bullseye | bookworm | trixie | jammy | noble
#
# The package list is rvl's own (`rvl setup` asks `apt-cache policy` for the same names;
# src/builddeps.rs `policy_names`, checked against this script by a unit test). Indexes are
# amd64 (ports.ubuntu.com, the arm64 archive, is not reachable here); the package names and
# versions of these suites are the same on arm64.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
release="${1:?usage: apt-policy-fixture.sh RELEASE [OUT]}"
out="${2:-$REPO_ROOT/tests/fixtures/apt-policy/$release.txt}"
DEB=/usr/share/keyrings/debian-archive-keyring.gpg
case "$release" in
    bullseye) lines=("deb [signed-by=$DEB] http://deb.debian.org/debian bullseye main" "deb [signed-by=$DEB] http://deb.debian.org/debian bullseye-updates main") ;;
    bookworm) lines=("deb [signed-by=$DEB] http://deb.debian.org/debian bookworm main" "deb [signed-by=$DEB] http://deb.debian.org/debian bookworm-updates main") ;;
    trixie) lines=("deb [signed-by=$DEB] http://deb.debian.org/debian trixie main" "deb [signed-by=$DEB] http://deb.debian.org/debian trixie-updates main") ;;
    jammy | noble)
        lines=("deb [trusted=yes] http://archive.ubuntu.com/ubuntu $release main universe"
            "deb [trusted=yes] http://archive.ubuntu.com/ubuntu $release-updates main universe") ;;
    *) die "unknown release $release (bullseye, bookworm, trixie, jammy, noble)" ;;
esac
# rvl's list, in rvl's order (policy_names in src/builddeps.rs).
names=(python3 python3-venv python3-mako python3-yaml python3-packaging meson ninja-build gcc g++
    pkg-config patch cmake bison flex glslang-tools libdrm-dev libexpat1-dev zlib1g-dev libzstd-dev
    libelf-dev spirv-tools)
for n in 22 21 20 19 18 17 16 15; do
    names+=("llvm-$n-dev" "libclang-cpp$n-dev" "libclang-$n-dev" "libclc-$n-dev" "libllvmspirvlib-$n-dev")
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/etc"
: >"$work/status"
printf '%s\n' "${lines[@]}" >"$work/etc/sources.list"
cat >"$work/apt.conf" <<CONF
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
Dir::Etc::SourceList "$work/etc/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "/dev/null";
Dir::State "$work";
Dir::State::Lists "$work/lists";
Dir::State::status "$work/status";
Dir::Cache "$work/cache";
Acquire::Languages "none";
CONF
export APT_CONFIG="$work/apt.conf"
apt-get update -q >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; die "apt-get update failed"; }
# Mirror URLs are replaced by the suite names, so the fixture does not depend on a mirror.
LC_ALL=C apt-cache policy "${names[@]}" 2>/dev/null |
    sed -E 's#https?://[^ ]+ ##' >"$out"
printf 'wrote %s (%s lines)\n' "$out" "$(wc -l <"$out")"
