#!/usr/bin/env bash
# The Ansible collection's gates, as CI runs them:
#
#   scripts/ansible-sanity.sh [--venv DIR] [--no-sanity]
#
# 1. DIR (default .cache/ansible) becomes a virtual environment with the ansible-core pinned in
#    ansible/tests/requirements.txt (made once, reused while the pin holds); its path is printed
#    on stdout, for RVL_ANSIBLE_VENV (tests/ansible.rs).
# 2. `ansible-test sanity` on a copy of ansible/ at <tmp>/ansible_collections/rvl/fleet
#    (ansible-test wants that layout and resolves links). Its test requirements come from PyPI;
#    its pip bootstrap script normally comes from ci-files.testing.ansible.com, so when that
#    script is not cached a stand-in (ensurepip, then pip from PyPI) is put in its place.
# Progress goes to stderr. About 4 minutes on 2 busy cores the first time (ansible-test installs
# pylint, yamllint and the validate-modules requirements into its own venvs), 20 s after.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.cache/ansible"
sanity=1
while [ $# -gt 0 ]; do
    case "$1" in
        --venv)
            [ $# -ge 2 ] || { echo "ansible-sanity: --venv needs a directory" >&2; exit 2; }
            venv="$2"
            shift 2
            ;;
        --no-sanity) sanity=0; shift ;;
        *) echo "ansible-sanity: unknown argument '$1' (usage: ansible-sanity.sh [--venv DIR] [--no-sanity])" >&2; exit 2 ;;
    esac
done
say() { printf 'ansible-sanity: %s\n' "$*" >&2; }
req="$repo/ansible/tests/requirements.txt"
pin="$(sed -n 's/^ansible-core==\([^ #]*\).*/\1/p' "$req")"
[ -n "$pin" ] || { say "error: $req pins no ansible-core"; exit 1; }

mkdir -p "$venv"
venv="$(cd "$venv" && pwd)"
have="$("$venv/bin/ansible-playbook" --version 2>/dev/null || true)"
if [[ "$have" != *"[core $pin]"* ]]; then
    say "ansible-core $pin into $venv"
    python3 -m venv --clear "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
fi
printf '%s\n' "$venv"
[ "$sanity" = 1 ] || exit 0

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
coll="$tmp/ansible_collections/rvl/fleet"
mkdir -p "$(dirname "$coll")"
cp -r "$repo/ansible" "$coll"
rm -rf "$coll/tests/output"
cache="$HOME/.ansible/test/cache"
# the pip version ansible-test bootstraps (`pip='24.2',` in its requirements module)
pip_version="$(sed -n "s/^ *pip='\([0-9.]*\)',.*/\1/p" "$venv"/lib/python3*/site-packages/ansible_test/_internal/python_requirements.py | head -n 1)"
bootstrap="$cache/get_pip_${pip_version//./_}.py"
if [ -n "$pip_version" ] && [ ! -f "$bootstrap" ]; then
    mkdir -p "$cache"
    cat >"$bootstrap" <<'PY'
# Stand-in for ansible-test's pip bootstrap script (written by rvl's scripts/ansible-sanity.sh):
# the interpreter's own ensurepip, then the pip ansible-test asked for, from PyPI.
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install"]
                      + [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")])
PY
fi
py="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
say "ansible-test sanity --python $py"
cd "$coll"
# ansible-test prints each test it runs and every problem; its pip chatter is left out.
rc=0
PATH="$venv/bin:$PATH" ansible-test sanity --python "$py" --color no >"$tmp/sanity.log" 2>&1 || rc=$?
grep -v -E '^ *(Collecting|Downloading|Installing collected|Successfully|Processing|Looking in|Attempting|Found existing|Uninstalling|━|Using cached [^p])' "$tmp/sanity.log" >&2 || true
[ "$rc" = 0 ] || say "error: ansible-test sanity failed (exit status $rc)"
exit "$rc"
