#!/usr/bin/env bash
# Build the panvk lab: an arm64 sysroot made from Debian's pinned binary
# packages (Mesa 26.1.6 panvk + noop DRM shim, Vulkan loader/tools, libc,
# LLVM runtime), plus the cross-compiled BO logger and spill-report harness.
#
#   scripts/panvk-lab/setup-sysroot.sh [CACHE_DIR]     (default .cache/panvk-lab)
#
# apt runs with a PRIVATE configuration under CACHE_DIR/apt (own sources, lists,
# archives and an empty dpkg status); /etc/apt is never read for sources nor
# written. Nothing is installed on the host except what `need_cmd` asks for.
# Re-running is cheap: apt reuses downloaded debs; the sysroot is rebuilt
# into a temporary directory and swapped in only when complete.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CACHE="${1:-$(lab_cache_dir)}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
PINS="$LAB_DIR/pins.conf"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

need_cmd apt-get apt
need_cmd dpkg-deb dpkg
need_cmd qemu-aarch64-static qemu-user-static
need_cmd aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
[ -r "$KEYRING" ] || die "missing $KEYRING (apt-get install debian-archive-keyring)"

# --- read the pins (strict: an unknown line is an error, with its number) ---
mirror=""
suites=()
packages=()
lineno=0
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line="${line%%#*}"
    read -r -a f <<<"$line" || true
    [ "${#f[@]}" -eq 0 ] && continue
    case "${f[0]}:${#f[@]}" in
        mirror:2) mirror="${f[1]}" ;;
        suite:2) suites+=("${f[1]}") ;;
        package:3) packages+=("${f[1]}=${f[2]}") ;;
        *) die "$PINS:$lineno: expected 'mirror URL', 'suite NAME' or 'package NAME VERSION', got: $line" ;;
    esac
done <"$PINS"
[ -n "$mirror" ] || die "$PINS: no 'mirror' line"
# The mirror URL is not pinned in the repo: take the Debian archive this machine's own apt
# configuration names (read only; the first URI ending in /debian), unless LAB_MIRROR is set.
if [ -n "${LAB_MIRROR:-}" ]; then
    mirror="$LAB_MIRROR"
elif [ "$mirror" = system ]; then
    mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        grep -oE '(https?|file)://[^ ]*/debian/?( |$)' | tr -d ' ' | sed 's:/$::' | head -n 1 || true)"
    # (|| true: a missing /etc/apt/sources.list makes cat fail, and pipefail
    # would end the script here without a message)
    [ -n "$mirror" ] || die "no Debian mirror found in /etc/apt/sources.list*; set LAB_MIRROR=URL"
fi
[ "${#suites[@]}" -gt 0 ] || die "$PINS: no 'suite' line"
[ "${#packages[@]}" -gt 0 ] || die "$PINS: no 'package' line"

# --- private apt configuration ---
APTD="$CACHE/apt"
mkdir -p "$APTD/etc" "$APTD/lists/partial" "$APTD/archives/partial"
[ -f "$APTD/status" ] || : >"$APTD/status"
{
    for s in "${suites[@]}"; do
        printf 'deb [signed-by=%s] %s %s main\n' "$KEYRING" "$mirror" "$s"
    done
} >"$APTD/etc/sources.list"
cat >"$APTD/etc/apt.conf" <<CONF
APT::Architecture "arm64";
APT::Architectures { "arm64"; };
APT::Install-Recommends "false";
APT::Sandbox::User "root";
Dir::Etc::SourceList "$APTD/etc/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "/dev/null";
Dir::State "$APTD";
Dir::State::Lists "$APTD/lists";
Dir::State::status "$APTD/status";
Dir::Cache "$APTD";
Dir::Cache::Archives "$APTD/archives";
Debug::NoLocking "true";
CONF
export APT_CONFIG="$APTD/etc/apt.conf"

echo "panvk-lab: apt update (private config in $APTD)"
apt-get -q update >"$APTD/update.log" 2>&1 || {
    tail -n 20 "$APTD/update.log" >&2
    die "apt-get update failed (log: $APTD/update.log)"
}

# The simulated install lists every package with the version apt resolved.
apt-get -s -y install "${packages[@]}" >"$APTD/plan.txt" 2>&1 || {
    tail -n 20 "$APTD/plan.txt" >&2
    die "cannot resolve the pinned packages (see $APTD/plan.txt)"
}
echo "panvk-lab: downloading $(grep -c '^Inst ' "$APTD/plan.txt") packages"
apt-get -q -y --download-only install "${packages[@]}" >"$APTD/download.log" 2>&1 || {
    tail -n 20 "$APTD/download.log" >&2
    die "download failed (log: $APTD/download.log)"
}

# --- unpack into a fresh sysroot, swap in when complete ---
ROOT="$(lab_sysroot "$CACHE")"
TMP="$ROOT.tmp"
rm -rf "$TMP"
mkdir -p "$TMP/usr/lib" "$TMP/usr/bin" "$TMP/usr/sbin" "$TMP/.lab"
ln -s usr/lib "$TMP/lib"
ln -s usr/bin "$TMP/bin"
ln -s usr/sbin "$TMP/sbin"
: >"$TMP/.lab/resolved.txt"
# "Inst NAME (VERSION SUITE [ARCH])"
sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) [^[]*\[\([a-z0-9]*\)\].*/\1 \2 \3/p' "$APTD/plan.txt" |
    while read -r name version arch; do
        deb="$APTD/archives/${name}_${version//:/%3a}_${arch}.deb"
        [ -f "$deb" ] || die "expected $deb after download"
        dpkg-deb -x "$deb" "$TMP"
        printf '%s %s %s %s\n' "$name" "$version" "$arch" "$(sha256sum "$deb" | cut -d' ' -f1)" >>"$TMP/.lab/resolved.txt"
    done
for rel in "$lab_shim_rel" "$lab_icd_rel" usr/lib/aarch64-linux-gnu/libvulkan.so.1; do
    [ -e "$TMP/$rel" ] || die "sysroot lacks $rel after unpacking"
done
cp "$PINS" "$TMP/.lab/pins.conf"
rm -rf "$ROOT"
mv "$TMP" "$ROOT"

# --- cross-compile the lab's own tools against the sysroot's Vulkan headers ---
"$LAB_DIR/build-tools.sh" "$CACHE"

date -u +%FT%TZ >"$ROOT/.lab/ready"
echo "panvk-lab: ready: $ROOT ($(du -sh "$ROOT" | cut -f1), $(wc -l <"$ROOT/.lab/resolved.txt") packages)"
echo "panvk-lab: try: scripts/panvk-lab/run.sh /usr/bin/vulkaninfo --summary"
