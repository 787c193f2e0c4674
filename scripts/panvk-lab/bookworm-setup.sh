#!/usr/bin/env bash
# The Debian 12 proof of issue 25: rvl's own `setup --only mesa,icd` takes a bare, freshly
# debootstrapped bookworm root to a patched panvk that `rvl doctor` recognises, running the exact
# code path a board runs (rvl runs *inside* the chroot, root "/": it asks the image's apt,
# installs the build packages with apt-get, builds the pinned SPIRV-Tools and meson's venv into
# /opt/rvl/build, builds Mesa with rvl's series into /opt/rvl/mesa-*, writes the ICD and the
# stamp). Native x86_64 stands in for arm64 (bookworm's package versions are the same).
#
#   scripts/panvk-lab/bookworm-setup.sh [--suite bookworm|noble] [--tarball FILE] [--rvl BIN] [STAGE...]
#
#   STAGE   root | tarball | setup | doctor | shim | proof   (default: all, in that order)
#   --tarball FILE   Mesa 26.2.4's real release tarball (sha256 bce5f7fb…, 68,613,948 B): the
#                    proof then uses the built-in manifest unchanged. Without it, the lab makes a
#                    stand-in `mesa-26.2.4` tree: 26.2.0-rc1 (the fetch tool's mirror of
#                    github:leegao/mesa-26.2, commit 3c34d70) plus mesa-rc1-26.2.4-backports.patch (the
#                    two 26.2.4 changes rvl's series is rebased on, docs/mesa-26.2.4-rebase.md),
#                    served on 127.0.0.1 and pinned in a lab copy of the manifest.
#   --rvl BIN        the rvl binary to run in the root (default: target/debug/rvl, built if absent)
#   --mesa-candidates  pass --mesa-candidates to rvl setup: the series and patches/mesa/candidates,
#                    built into /opt/rvl/mesa-26.2.4-rvl1-candidates-<id> (use another LAB for it)
#
# Everything lives under $LAB (default /work/bookworm-lab; /work/bookworm-lab-noble for noble):
#   root/        the chroot (debootstrap minbase; stamp root/.lab-debootstrap)
#   dl/          the lab tarball, the lab manifest
#   logs/        setup.log (rvl's own output), doctor.txt, disk.txt, times.txt, proof.tsv
# Heavy work runs at nice 19 / ionice -c3. Needs root (debootstrap, chroot, bind mounts).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

suite=bookworm
tarball=""
rvl_bin=""
stages=()
setup_flags=()
while [ $# -gt 0 ]; do
    case "$1" in
        --suite) suite="$2"; shift 2 ;;
        --tarball) tarball="$(realpath "$2")"; shift 2 ;;
        --rvl) rvl_bin="$(realpath "$2")"; shift 2 ;;
        --mesa-candidates) setup_flags+=(--mesa-candidates); shift ;;
        root | tarball | setup | doctor | shim | proof) stages+=("$1"); shift ;;
        *) die "usage: bookworm-setup.sh [--suite bookworm|noble] [--tarball FILE] [--rvl BIN] [--mesa-candidates] [root|tarball|setup|doctor|shim|proof]..." ;;
    esac
done
[ ${#stages[@]} -gt 0 ] || stages=(root tarball setup doctor shim proof)
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, bind mounts)"
case "$suite" in
    bookworm) LAB="${LAB:-/work/bookworm-lab}"; MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"; COMPONENTS=main ;;
    noble) LAB="${LAB:-/work/bookworm-lab-noble}"; MIRROR="${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}"; COMPONENTS=main,universe ;;
    *) die "--suite: bookworm or noble" ;;
esac
R="$LAB/root"
mkdir -p "$LAB/dl" "$LAB/logs"
LOW=(nice -n 19 ionice -c3)
t0=$(date +%s)
step() { printf '[bookworm-lab %s +%ds] %s\n' "$(date -u +%H:%M:%S)" "$(($(date +%s) - t0))" "$*"; }
want() { local s; for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

mounted=()
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
    done
}
trap cleanup EXIT
mounts() {
    local d
    for d in proc dev; do
        mountpoint -q "$R/$d" && continue
        mkdir -p "$R/$d"
        if [ "$d" = proc ]; then mount -t proc proc "$R/proc"; else mount --bind /dev "$R/dev"; fi
        mounted+=("$R/$d")
    done
}
# rvl in the root sees only the root: a clean environment, as `sudo` on a board gives.
# RVL_LAB_MACHINE=1: the chroot stands in for the board, so setup may change "this machine".
in_root() { chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb RVL_LAB_MACHINE=1 "$@"; }

# ---- root: a bare image
if want root; then
    if [ ! -f "$R/.lab-debootstrap" ]; then
        need_cmd debootstrap debootstrap
        step "debootstrap --variant=minbase $suite into $R ($MIRROR)"
        rm -rf "$R"
        extra=()
        # Debian 12's debootstrap has no noble script and no Ubuntu keyring: Ubuntu's suites
        # all use the gutsy script; the archive's Release files are then not signature-checked.
        [ "$suite" = noble ] && extra=(--no-check-gpg)
        script=()
        [ "$suite" = noble ] && script=(/usr/share/debootstrap/scripts/gutsy)
        "${LOW[@]}" debootstrap --variant=minbase --components="$COMPONENTS" --include=ca-certificates "${extra[@]}" \
            "$suite" "$R" "$MIRROR" "${script[@]}" >"$LAB/logs/debootstrap.log" 2>&1 ||
            { tail -n 20 "$LAB/logs/debootstrap.log" >&2; die "debootstrap failed (log: $LAB/logs/debootstrap.log)"; }
        if [ "$suite" = noble ]; then
            # What an Ubuntu 24.04 board has enabled: the release and its updates, main + universe.
            printf 'deb [trusted=yes] %s noble main universe\ndeb [trusted=yes] %s noble-updates main universe\n' "$MIRROR" "$MIRROR" >"$R/etc/apt/sources.list"
        fi
        touch "$R/.lab-debootstrap"
    fi
    mounts
    in_root apt-get update -q >"$LAB/logs/apt-update.log" 2>&1 || die "apt-get update in the root failed"
    step "root ready: $(du -sh --exclude=proc --exclude=dev "$R" 2>/dev/null | cut -f1), $(in_root dpkg-query -W | wc -l) packages"
fi

# ---- tarball: Mesa 26.2.4 (real) or the lab's stand-in, and the manifest that pins it
MANIFEST_ARG=()
if want tarball || want setup; then
    if [ -n "$tarball" ]; then
        step "using $tarball with the built-in manifest"
        got=$(sha256sum "$tarball" | cut -d' ' -f1)
        [ "$got" = bce5f7fbebb934373b86c999a064d52fb5065878dc57f287f95346648ec832e9 ] ||
            die "$tarball is not Mesa 26.2.4 (sha256 $got)"
    else
        lab_tar="$LAB/dl/mesa-26.2.4-lab.tar.xz"
        if [ ! -f "$lab_tar" ]; then
            git_dir="${MESA_MIRROR:-/work/.mirror/leegao+mesa-26.2/repo}"
            [ -d "$git_dir" ] || die "no Mesa mirror at $git_dir (fetch github:leegao/mesa-26.2), or pass --tarball"
            step "making the stand-in mesa-26.2.4 tree: 26.2.0-rc1 (3c34d70) + mesa-rc1-26.2.4-backports.patch"
            tmp="$LAB/dl/tree.tmp"
            rm -rf "$tmp" && mkdir -p "$tmp/mesa-26.2.4"
            lst=$(git --git-dir="$git_dir" ls-tree -r 3c34d70)
            missing=()
            while read -r sha; do
                missing+=(":(exclude)$(awk -F'\t' -v s="$sha" 'index($1, s) { print $2 }' <<<"$lst")")
            done < <(awk -F'\t' '{ split($1, a, " "); print a[3] }' <<<"$lst" |
                git --git-dir="$git_dir" cat-file --batch-check | awk '$2 == "missing" { print $1 }')
            git --git-dir="$git_dir" archive 3c34d70 -- . "${missing[@]}" 2>/dev/null | tar -x -C "$tmp/mesa-26.2.4"
            patch -d "$tmp/mesa-26.2.4" -p1 <"$LAB_DIR/mesa-rc1-26.2.4-backports.patch" >/dev/null
            "${LOW[@]}" tar -C "$tmp" --sort=name --owner=0 --group=0 --numeric-owner --mtime=2026-10-01 -cf - mesa-26.2.4 |
                "${LOW[@]}" xz -1 -T1 >"$lab_tar.part"
            mv "$lab_tar.part" "$lab_tar"
            rm -rf "$tmp"
        fi
        size=$(stat -c %s "$lab_tar")
        sha=$(sha256sum "$lab_tar" | cut -d' ' -f1)
        port="${LAB_PORT:-8725}"
        # The lab manifest: the built-in one with only the Mesa archive's url, size and sha256 changed.
        sed -e "s#^    url: https://archive.mesa3d.org/mesa-26.2.4.tar.xz#    url: http://127.0.0.1:$port/mesa-26.2.4-lab.tar.xz#" \
            -e "s#^    size: 68613948#    size: $size#" \
            -e "s#^    sha256: bce5f7fbebb934373b86c999a064d52fb5065878dc57f287f95346648ec832e9#    sha256: $sha#" \
            "$REPO_ROOT/firmware-manifest/manifest.yaml" >"$LAB/dl/manifest-lab.yaml"
        grep -q "127.0.0.1:$port" "$LAB/dl/manifest-lab.yaml" || die "the lab manifest has no lab url (manifest.yaml changed?)"
        # The build tools' pinned files, fetched here with curl (this machine's network
        # intercepts TLS with a CA that rvl's bundled web roots do not trust), checked against
        # the manifest's sha256, and served from 127.0.0.1 too: same bytes, same pins.
        python3 - "$LAB/dl/manifest-lab.yaml" "$port" "$LAB/dl" <<'PY' || die "fetching the build tools' pinned files failed"
import hashlib, re, subprocess, sys
path, port, dl = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path).read()
head, _, tools = text.partition("\nbuild_tools:\n")
out = []
for url, sha in re.findall(r"url: (https://\S+)\n    size: \d+\n    sha256: ([0-9a-f]{64})", tools):
    name = url.rsplit("/", 1)[1]
    dest = f"{dl}/{name}"
    try:
        ok = hashlib.sha256(open(dest, "rb").read()).hexdigest() == sha
    except OSError:
        ok = False
    if not ok:
        subprocess.run(["curl", "-sSfL", "-o", dest, url], check=True)
        got = hashlib.sha256(open(dest, "rb").read()).hexdigest()
        if got != sha:
            sys.exit(f"{url}: sha256 {got}, the manifest pins {sha}")
    tools = tools.replace(url, f"http://127.0.0.1:{port}/{name}")
open(path, "w").write(head + "\nbuild_tools:\n" + tools)
PY
        mkdir -p "$R/lab"
        cp "$LAB/dl/manifest-lab.yaml" "$R/lab/manifest-lab.yaml"
        MANIFEST_ARG=(--manifest /lab/manifest-lab.yaml)
        step "stand-in tarball $lab_tar: $size B, sha256 $sha"
        if want setup; then
            (cd "$LAB/dl" && exec python3 -m http.server --bind 127.0.0.1 "$port" >"$LAB/logs/http.log" 2>&1) &
            server_pid=$!
            sleep 1
        fi
    fi
fi

# ---- setup: rvl's own steps, inside the root
if want setup; then
    mounts
    if [ -z "$rvl_bin" ]; then
        rvl_bin="$REPO_ROOT/target/debug/rvl"
        [ -x "$rvl_bin" ] || (cd "$REPO_ROOT" && nice -n 10 cargo build --quiet) || die "cannot build rvl"
    fi
    install -m 0755 "$rvl_bin" "$R/usr/local/bin/rvl"
    df -B1M --output=used "$R" | tail -n 1 >"$LAB/logs/disk-before.txt"
    du -sm --exclude=proc --exclude=dev --exclude=lab "$R" | cut -f1 >"$LAB/logs/root-mb-before.txt"
    step "rvl setup --board boltzmann --only mesa,icd --yes (log: $LAB/logs/setup.log)"
    s0=$(date +%s)
    rc=0
    in_root "${LOW[@]}" rvl setup --board boltzmann --only mesa,icd --yes "${setup_flags[@]}" "${MANIFEST_ARG[@]}" \
        >"$LAB/logs/setup.log" 2>&1 || rc=$?
    s1=$(date +%s)
    printf 'setup: exit %s after %ss\n' "$rc" "$((s1 - s0))" | tee "$LAB/logs/times.txt"
    grep -E "done in|installing|resuming" "$LAB/logs/setup.log" >>"$LAB/logs/times.txt" || true
    [ "$rc" = 0 ] || { tail -n 40 "$LAB/logs/setup.log" >&2; die "rvl setup failed (exit $rc)"; }
    {
        printf 'root, MiB (du, before -> after): %s -> %s\n' "$(cat "$LAB/logs/root-mb-before.txt")" \
            "$(du -sm --exclude=proc --exclude=dev --exclude=lab "$R" | cut -f1)"
        du -sm "$R/opt/rvl"/* "$R/opt/rvl/build"/* "$R/var/lib/rvl/cache" "$R/var/cache/apt" 2>/dev/null
    } | tee "$LAB/logs/disk.txt"
    step "a second plan must be empty"
    in_root rvl setup --board boltzmann --only mesa,icd --dry-run "${setup_flags[@]}" "${MANIFEST_ARG[@]}" | tee "$LAB/logs/second-plan.txt"
fi

# ---- doctor: does it name rvl's patched panvk with its series level?
if want doctor; then
    mounts
    step "rvl doctor in the root"
    in_root rvl doctor --board boltzmann >"$LAB/logs/doctor.txt" 2>&1 || true
    in_root rvl doctor --board boltzmann --json >"$LAB/logs/doctor.json" 2>/dev/null || true
    grep -iE "vulkan-icd|panvk" "$LAB/logs/doctor.txt" || true
    python3 - "$LAB/logs/doctor.json" <<'PY' || die "doctor's vulkan-icd is not green"
import json, sys
d = json.load(open(sys.argv[1]))
c = next(c for c in d["checks"] if c["id"] == "vulkan-icd")
print("vulkan-icd:", c["status"], "-", c["summary"])
sys.exit(0 if c["status"] == "pass" else 1)
PY
fi

# ---- shim: the panfrost noop DRM shim, from the same tree, for the proof (lab only: rvl's
# build has no drm-shim). It reuses rvl's build tools in /opt/rvl/build and the release's LLVM.
if want shim; then
    mounts
    in_root apt-get install -y -q --no-install-recommends libvulkan-dev vulkan-tools >"$LAB/logs/apt-lab.log" 2>&1 ||
        die "installing the lab's Vulkan tools failed (log: $LAB/logs/apt-lab.log)"
    S="$R/lab/shim"
    if [ ! -f "$S/build/src/panfrost/drm-shim/libpanfrost_noop_drm_shim.so" ]; then
        step "building the noop DRM shim from the same tree"
        rm -rf "$S" && mkdir -p "$S"
        src_tar="${tarball:-$LAB/dl/mesa-26.2.4-lab.tar.xz}"
        tar -xf "$src_tar" -C "$S"
        patch -d "$S/mesa-26.2.4" -p1 <"$REPO_ROOT/patches/mesa/0001-panvk-csf-back-compute-TLS-with-one-grow-only-buffer.patch" >/dev/null
        patch -d "$S/mesa-26.2.4" -p1 <"$REPO_ROOT/patches/mesa/0002-panfrost-compute-TLS-and-WLS-buffer-sizes-in-64-bits.patch" >/dev/null
        meson=$(ls -d "$R"/opt/rvl/build/meson-*/bin/meson 2>/dev/null | head -n 1)
        meson="${meson#"$R"}"
        [ -n "$meson" ] || meson=meson
        spv=$(ls -d "$R"/opt/rvl/build/spirv-tools-*/lib/pkgconfig 2>/dev/null | head -n 1)
        spv="${spv#"$R"}"
        llvm=$(ls "$R"/usr/bin/llvm-config-* | sort -V | tail -n 1)
        printf "[binaries]\nllvm-config = '%s'\n" "${llvm#"$R"}" >"$S/native.ini"
        in_root "${LOW[@]}" env PKG_CONFIG_PATH="$spv" "$meson" setup /lab/shim/build /lab/shim/mesa-26.2.4 \
            --native-file=/lab/shim/native.ini -Dvulkan-drivers=panfrost -Dgallium-drivers= -Dtools=drm-shim \
            -Dplatforms= -Dllvm=enabled -Dglx=disabled -Degl=disabled -Dgbm=disabled -Dgles1=disabled \
            -Dgles2=disabled -Dopengl=false -Dvalgrind=disabled -Dlibunwind=disabled -Dvideo-codecs= \
            >"$LAB/logs/shim.log" 2>&1 || { tail -n 20 "$LAB/logs/shim.log" >&2; die "shim configure failed"; }
        in_root "${LOW[@]}" ninja -C /lab/shim/build -j2 src/panfrost/drm-shim/libpanfrost_noop_drm_shim.so \
            >>"$LAB/logs/shim.log" 2>&1 || { tail -n 20 "$LAB/logs/shim.log" >&2; die "shim build failed"; }
    fi
fi

# ---- proof: tls-proof.sh against rvl's installed panvk (the ICD setup wrote)
if want proof; then
    step "tls-proof.sh --drivers rvl (log: $LAB/logs/proof.tsv)"
    S=src/bench/shaders
    MESA_LAB="$LAB" LAB_CHROOT="$R" TLS_PROOF_OUT="$LAB/proof" "$LAB_DIR/tls-proof.sh" --drivers rvl --ns 1,8,64 \
        "tiled-128x128:$REPO_ROOT/$S/gemm_tiled_f32.spv:--spec 0=256|--spec 1=128|--spec 2=128|--spec 3=16|--spec 4=8|--spec 5=8|--groups 4,32,1" \
        "probe-spill-128:$REPO_ROOT/$S/probe_spill.spv:--spec 0=128|--groups 86,1,1" | tee "$LAB/logs/proof.tsv"
fi
step "done"
