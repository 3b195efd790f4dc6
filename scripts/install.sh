#!/usr/bin/env bash
# Install embedprobe into a virtual environment (default .venv), on a CPU machine or a GPU node.
# Usage: scripts/install.sh [VENV_DIR] [--test] [--time-series] [--cuda auto|cpu|cu126|cu128|cu130]
#        [--dry-run]
#   --test: the test extras, and the time-series extra too, so its models' tests run
#          instead of skipping.
#   --time-series: the optional extra of the time-series foundation models (Chronos:
#          envs/requirements-time-series.txt), constrained by the runtime pins.
#   --cuda auto (default): a CUDA build of the pinned torch where an NVIDIA driver answers
#          (nvidia-smi), the newest build the driver supports; else the CPU wheel.
#   --cuda cuXYZ: that CUDA build from the PyTorch index; --cuda cpu: the CPU wheel.
#   --dry-run: print the commands, run none.
set -euo pipefail
TORCH=2.13.0  # as envs/requirements.txt pins it
CUDA_BUILDS=(cu126 cu128 cu130)  # oldest first; each needs a driver for that CUDA or newer
TORCH_INDEX=https://download.pytorch.org/whl

venv=.venv extras="" cuda=auto dry="" time_series=""
while [ $# -gt 0 ]; do
  case "$1" in
    --test) extras="[test]" time_series=1 ;;
    --time-series) time_series=1 ;;
    --cuda) [ $# -ge 2 ] || { echo "error: --cuda needs a value (auto, cpu or cuXYZ)" >&2; exit 2; }
            cuda=$2; shift ;;
    --cuda=*) cuda=${1#--cuda=} ;;
    --dry-run) dry=1 ;;
    -*) echo "error: unknown option $1" >&2
        echo "fix: scripts/install.sh [VENV_DIR] [--test] [--time-series] [--cuda auto|cpu|cu126|cu128|cu130]" >&2
        exit 2 ;;
    *) venv=$1 ;;
  esac
  shift
done

run() {  # a command, or its line under --dry-run
  if [ -n "$dry" ]; then echo "$*"; else "$@"; fi
}

# The newest CUDA build the NVIDIA driver supports ("CUDA Version: 12.8" in nvidia-smi's
# header is the driver's limit), or cpu where no driver answers.
detect_cuda() {
  local line version want build chosen=cpu
  line=$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: *[0-9]*\.[0-9]*' | head -1) || true
  [ -n "$line" ] || { echo cpu; return; }
  version=${line##*: }
  want=$(( ${version%%.*} * 10 + ${version##*.} ))  # 12.8 -> 128
  for build in "${CUDA_BUILDS[@]}"; do
    [ "${build#cu}" -le "$want" ] && chosen=$build
  done
  echo "$chosen"
}

case "$cuda" in
  auto) cuda=$(detect_cuda)
        if [ "$cuda" = cpu ] && command -v nvidia-smi >/dev/null 2>&1; then
          echo "warning: nvidia-smi is here but its driver supports none of ${CUDA_BUILDS[*]}:" \
               "installing the CPU torch" >&2
          echo "fix: update the NVIDIA driver, or pass --cuda cuXYZ for a build it supports" >&2
        fi ;;
  cpu|cu[0-9][0-9][0-9]) ;;
  *) echo "error: --cuda $cuda: not auto, cpu or a CUDA build like cu126" >&2
     echo "fix: scripts/install.sh $venv --cuda cu126   # or: --cuda cpu" >&2
     exit 2 ;;
esac

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
[ -x "$venv/bin/python" ] || run python3 -m venv "$venv"
run "$venv/bin/python" -m pip install -q --upgrade pip
if [ "$cuda" != cpu ]; then
  # The CUDA build of the pinned torch first; envs/requirements.txt's torch==$TORCH then finds
  # it installed (a local label like +cu126 satisfies ==) and keeps it.
  echo "note: installing torch==$TORCH for CUDA ($cuda) from $TORCH_INDEX/$cuda" >&2
  run "$venv/bin/python" -m pip install -q "torch==$TORCH" --index-url "$TORCH_INDEX/$cuda"
fi
# On a CPU machine torch is pinned to the CPU wheel (FACTS.md): a looser spec pulls a multi-GB
# CUDA build.
run "$venv/bin/python" -m pip install -q -r envs/requirements.txt
run "$venv/bin/python" -m pip install -q --no-deps -e ".${extras}"
# The runtime pins constrain the test extras: nothing they pull in may upgrade snakemake or torch.
if [ -n "$extras" ]; then
  run "$venv/bin/python" -m pip install -q -r envs/requirements-test.txt -c envs/requirements.txt
fi
# The time-series models' own packages: the same constraint (transformers must not move torch).
if [ -n "$time_series" ]; then
  run "$venv/bin/python" -m pip install -q -r envs/requirements-time-series.txt \
    -c envs/requirements.txt
fi
# braindecode imports torchaudio.functional; PyPI's torchaudio is built for another torch, and
# its shared objects fail to load beside this one (CPU or CUDA). Without them it imports as pure
# Python (FACTS.md).
if [ -n "$dry" ]; then
  echo "rm -f SITE_PACKAGES/torchaudio/lib/*.so"
  exit 0
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -f "$site"/torchaudio/lib/*.so
"$venv/bin/python" -c 'import braindecode.models, embedprobe' \
  || { echo "error: braindecode or embedprobe does not import in $venv" >&2; exit 1; }
if [ "$cuda" != cpu ]; then
  "$venv/bin/python" - "$cuda" <<'PY' || exit 1
import sys
import torch
if not torch.version.cuda:
    sys.exit(f"error: torch {torch.__version__} is a CPU build after asking for {sys.argv[1]}\n"
             "fix: rerun scripts/install.sh with --cuda and a fresh venv directory")
seen = torch.cuda.device_count() if torch.cuda.is_available() else 0
print(f"note: torch {torch.__version__} (CUDA {torch.version.cuda}) sees {seen} GPU(s)"
      + ("" if seen else ": none on this node (a login node?); jobs on GPU nodes will"),
      file=sys.stderr)
PY
fi
echo "installed embedprobe into $venv (torch: $cuda)"
