#!/usr/bin/env bash
# Install embedprobe into a virtual environment (default .venv) on a CPU machine.
# Usage: scripts/install.sh [VENV_DIR] [--test]
set -euo pipefail
venv=${1:-.venv}
extras=""
[ "${2:-}" = "--test" ] && extras="[test]"
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
# torch is pinned to the CPU wheel (FACTS.md): a looser spec pulls a multi-GB CUDA build.
"$venv/bin/python" -m pip install -q -r envs/requirements.txt
"$venv/bin/python" -m pip install -q --no-deps -e ".${extras}"
# The runtime pins constrain the test extras: nothing they pull in may upgrade snakemake or torch.
if [ -n "$extras" ]; then
  "$venv/bin/python" -m pip install -q -r envs/requirements-test.txt -c envs/requirements.txt
fi
# braindecode imports torchaudio.functional; PyPI's torchaudio is a CUDA build whose shared
# objects fail to load beside the CPU torch. Without them it imports as pure Python (FACTS.md).
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -f "$site"/torchaudio/lib/*.so
"$venv/bin/python" -c 'import braindecode.models, embedprobe' \
  || { echo "error: braindecode or embedprobe does not import in $venv" >&2; exit 1; }
echo "installed embedprobe into $venv"
