#!/usr/bin/env bash
# Spill and scratch report for one compute shader on panvk (Mesa 26.1.6,
# Mali-G610 via the noop DRM shim, under qemu):
#
#   scripts/panvk-lab/spill-report.sh SHADER.spv [--local X,Y,Z] [--groups X,Y,Z]...
#        [--spec ID=VAL]... [--dispatches N] [--cmdbufs N] [--row] [--no-cache]
#   PANVK_LAB_NATIVE=stock|patched  use the native Mesa 26.2 build instead (build-mesa.sh)
#
# Prints registers, spills, fills (VK_KHR_pipeline_executable_properties, and
# BIFROST_MESA_DEBUG=shaderdb as a cross-check), the TLS buffer allocated at
# vkEndCommandBuffer, the WLS buffer allocated per dispatch and the total
# BO memory the command buffer made the driver allocate.
# Each --groups shape is recorded into its own command buffer (one compile).
# --row prints one tab-separated line per shape instead (for tables):
#   name groups spills fills regs tls_bytes wls_bytes cmdbuf_bytes end_result compile_s
#
# Results are cached under CACHE/reports/ by sha256 of the shader, the
# arguments, the pins and the harness source: a big shader compiles for
# minutes under qemu, a cached one answers at once. --no-cache recompiles.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { die "usage: spill-report.sh SHADER.spv [--local X,Y,Z] [--groups X,Y,Z] [--spec ID=VAL]... [--dispatches N] [--cmdbufs N] [--row] [--no-cache]"; }
[ $# -ge 1 ] || usage
shader="$1"
shift
[ -f "$shader" ] || die "no such shader file: $shader"
row=0
cache=1
harness_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --row) row=1; shift ;;
        --no-cache) cache=0; shift ;;
        --local | --groups | --spec | --dispatches | --cmdbufs)
            [ $# -ge 2 ] || die "$1 needs a value"
            harness_args+=("$1" "$2")
            shift 2 ;;
        *) usage ;;
    esac
done

CACHE="$(lab_cache_dir)"
# PANVK_LAB_NATIVE=stock|patched: run the natively built Mesa 26.2 panvk
# (build-mesa.sh, native-run.sh) instead of Debian's 26.1.6 under qemu.
native="${PANVK_LAB_NATIVE:-}"
driver_id="qemu $(cat "$LAB_DIR/pins.conf")"
if [ -n "$native" ]; then
    case "$native" in stock | patched) ;; *) die "PANVK_LAB_NATIVE must be stock or patched" ;; esac
    so="${MESA_LAB:-/work/mesa-lab}/chroot/lab/build-$native/src/panfrost/vulkan/libvulkan_panfrost.so"
    [ -f "$so" ] || die "no native $native build ($so); run build-mesa.sh"
    driver_id="native $native $(sha256sum <"$so")"
    mkdir -p "$CACHE"
else
    lab_require_ready "$CACHE"
fi
key=$(
    {
        sha256sum <"$shader"
        printf '%s\n' "${harness_args[@]+"${harness_args[@]}"}"
        printf '%s\n' "$driver_id"
        cat "$LAB_DIR/spill_harness.c" "$LAB_DIR/bolog.c"
    } | sha256sum | cut -c1-32
)
dir="$CACHE/reports/$key"
if [ "$cache" = 0 ] || [ ! -f "$dir/out.txt" ]; then
    # A private temporary directory per run: two runs of the same key (two
    # terminals, two tables) must not delete each other's half-written results.
    mkdir -p "$CACHE/reports"
    tmp="$(mktemp -d "$dir.tmp.XXXXXX")"
    rc=0
    if [ -n "$native" ]; then
        nflag=()
        [ "$native" = patched ] && nflag=(--patched)
        LAB_ENV="BIFROST_MESA_DEBUG=shaderdb ${LAB_ENV:-}" \
            "$LAB_DIR/native-run.sh" "${nflag[@]+"${nflag[@]}"}" spill_harness "$shader" \
            "${harness_args[@]+"${harness_args[@]}"}" >"$tmp/out.txt" 2>"$tmp/stderr.log" || rc=$?
    else
        LAB_ENV="BIFROST_MESA_DEBUG=shaderdb ${LAB_ENV:-}" \
            "$LAB_DIR/run.sh" "$CACHE/bin/spill_harness" "$shader" "${harness_args[@]+"${harness_args[@]}"}" \
            >"$tmp/out.txt" 2>"$tmp/stderr.log" || rc=$?
    fi
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then   # 5 = vkEndCommandBuffer failed: still a result
        tail -n 5 "$tmp/stderr.log" >&2
        rm -rf "$tmp"
        die "harness failed (exit $rc) on $shader"
    fi
    printf '%s\n' "$shader" "${harness_args[@]+"${harness_args[@]}"}" >"$tmp/args.txt"
    # Publish: the first complete result wins, a later identical one is
    # dropped; --no-cache replaces the old one.
    [ "$cache" = 0 ] && rm -rf "$dir"
    if ! mv -T "$tmp" "$dir" 2>/dev/null; then
        rm -rf "$tmp"
    fi
fi

val() { sed -n "s/^$1=//p" "$dir/out.txt" | head -n 1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
spills=$(val stat.Spills)
fills=$(val stat.Fills)
regs=$(val stat.Registers_used)
shaderdb=$(grep -o '[0-9]*:[0-9]* spills:fills.*registers used' "$dir/stderr.log" | head -n 1 || true)
compile=$(val compile_seconds)
shapes=$(val shapes)
# Driver pool slabs are 64 KiB; anything bigger allocated at End is the TLS
# (scratch) buffer, anything bigger while recording is WLS (shared memory).
slab=65536

if [ "$row" = 0 ]; then
    echo "shader     $shader (sha256 $(sha256sum <"$shader" | cut -c1-16)...)"
    echo "args       ${harness_args[*]:-(none)}"
    echo "workgroup  $(val local.x),$(val local.y),$(val local.z)  dispatches/cmdbuf $(val dispatches)"
    echo "device     $(val device), $(val driver)"
    echo "compile    ${compile} s under qemu (cached in $dir)"
    echo "registers  ${regs}   spills ${spills}   fills ${fills}   (shaderdb: ${shaderdb:-n/a})"
fi
for ((g = 0; g < shapes; g++)); do
    end_largest=$(val "bo.end.$g.largest")
    rec_largest=$(val "bo.record.$g.largest")
    tls=0
    [ "${end_largest:-0}" -gt "$slab" ] && tls=$end_largest
    wls=0
    [ "${rec_largest:-0}" -gt "$slab" ] && wls=$rec_largest
    cmdbuf=$(($(val "bo.record.$g.bytes") + $(val "bo.end.$g.bytes")))
    end_result=$(val "end_result.$g.0")
    groups=$(val "groups.$g")
    if [ "$row" = 1 ]; then
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$shader")" "$groups" "$spills" "$fills" \
            "$regs" "$tls" "$wls" "$cmdbuf" "$end_result" "$compile"
        continue
    fi
    echo "groups     $groups"
    if [ "$tls" -gt 0 ]; then
        echo "  TLS BO   $tls B ($(mib "$tls")) allocated at vkEndCommandBuffer"
    else
        echo "  TLS BO   none"
    fi
    if [ "$wls" -gt 0 ]; then
        echo "  WLS BO   $wls B ($(mib "$wls")) per dispatch"
    else
        echo "  WLS BO   none above the 64 KiB pool slab"
    fi
    ncb=$(val cmdbufs)
    if [ "${ncb:-1}" -gt 1 ]; then
        echo "  cmdbufs  $cmdbuf B ($(mib "$cmdbuf")) of BOs for recording + End of $ncb command buffers (each its own TLS); first vkEndCommandBuffer = $end_result"
    else
        echo "  cmdbuf   $cmdbuf B ($(mib "$cmdbuf")) of BOs for recording + End; vkEndCommandBuffer = $end_result"
    fi
done
