#!/usr/bin/env bash
# Before/after proof for patches/mesa (native lab, build-mesa.sh): N command
# buffers alive at once, each with one dispatch of a spilling shader, all
# ended, then each submitted; optionally reset and recorded again. Prints one
# tab-separated row per (driver, shader, N, rerecord):
#
#   driver shader N rerecord spills tls_end tls_submit record live_ended live_submitted end_failed
#
#   tls_end        bytes of BOs created by vkEndCommandBuffer (stock: the TLS)
#   tls_submit     bytes of BOs created by vkQueueSubmit (patched: the queue TLS)
#   record         bytes of BOs created while recording (WLS + CS/descriptor slabs)
#   live_*         the driver's live BO total after all N are ended / submitted
#                  (minus what the device held before recording)
#   end_failed     command buffers whose vkEndCommandBuffer failed (not submitted)
#
#   scripts/panvk-lab/tls-proof.sh [--drivers stock,patched] [--ns 1,8,64] [--rerecord K] CASE...
#   (driver `rvl`: the panvk rvl setup installed in LAB_CHROOT, see bookworm-setup.sh)
#   CASE = label:SHADER.spv:harness args separated by '|' , e.g.
#     'probe-128:src/bench/shaders/probe_spill.spv:--spec 0=128|--groups 86,1,1'
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
drivers=stock,patched
ns=1,8,64
rerecord=0
while [ $# -gt 0 ]; do
    case "$1" in
        --drivers) drivers="$2"; shift 2 ;;
        --ns) ns="$2"; shift 2 ;;
        --rerecord) rerecord="$2"; shift 2 ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || die "usage: tls-proof.sh [--drivers LIST] [--ns LIST] [--rerecord K] label:SHADER.spv:ARGS..."
out_dir="${TLS_PROOF_OUT:-${MESA_LAB:-/work/mesa-lab}/proof}"
mkdir -p "$out_dir"
printf 'driver\tshader\tN\trerecord\tspills\ttls_end\ttls_submit\trecord\tlive_ended\tlive_submitted\tend_failed\n'
for c in "$@"; do
    label="${c%%:*}"
    rest="${c#*:}"
    spv="${rest%%:*}"
    args_s="${rest#*:}"
    IFS='|' read -r -a hargs <<<"$args_s"
    extra=()
    for a in "${hargs[@]}"; do read -r -a w <<<"$a"; extra+=("${w[@]}"); done
    for d in ${drivers//,/ }; do
        flag=()
        [ "$d" = patched ] && flag=(--patched)
        [ "$d" = rvl ] && flag=(--rvl)
        for n in ${ns//,/ }; do
            log="$out_dir/$d-$label-n$n-r$rerecord.txt"
            rr=()
            [ "$rerecord" -gt 0 ] && rr=(--rerecord "$rerecord")
            rc=0
            "$LAB_DIR/native-run.sh" "${flag[@]}" spill_harness "$spv" "${extra[@]}" --cmdbufs "$n" --submit \
                "${rr[@]+"${rr[@]}"}" >"$log" 2>"$log.err" || rc=$?
            v() { sed -n "s/^$1=//p" "$log" | head -n 1; }
            if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then
                # The driver died (stock panvk asserts on some out-of-memory
                # paths): report what was measured up to there.
                [ -n "$(v live.before_record)" ] || { tail -n 5 "$log.err" >&2; die "harness failed ($rc) for $d $label N=$n"; }
                why=$(grep -m1 -o 'Assertion.*failed' "$log.err" || echo "exit $rc")
                printf '%s\t%s\t%s\t%s\tdriver aborted after %s of %s vkEndCommandBuffer calls (%s failed): %s\n' \
                    "$d" "$label" "$n" "$rerecord" "$(grep -c '^end_result' "$log")" "$n" \
                    "$(grep -c '^end_result.*=-[0-9]' "$log")" "$why"
                continue
            fi
            base=$(v live.before_record)
            last=$rerecord
            ended=$(v "live.$([ "$last" -gt 0 ] && echo rerecorded || echo ended).0.$last")
            submitted=$(v "live.submitted.0.$last")
            tls_end=$(v bo.end.0.bytes)
            [ "$rerecord" -gt 0 ] && tls_end="$tls_end+rerecord:$(v bo.rerecord.0.bytes)"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$d" "$label" "$n" "$rerecord" \
                "$(v stat.Spills):$(v stat.Fills)" "$tls_end" "$(v bo.submit.0.bytes)" "$(v bo.record.0.bytes)" \
                "$((ended - base))" "$((submitted - base))" "$(v end_failures)"
        done
    done
done
