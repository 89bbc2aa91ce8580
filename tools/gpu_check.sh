#!/usr/bin/env bash
# One-shot CUDA check of rsim's trainer on a lent GPU machine (see tools/gpu_check.py for the steps).
#
#   bash tools/gpu_check.sh     # from the repo root (rsim is imported from $PWD); writes $OUT/gpu_check.log and
#                               # $OUT/gpu_check.json (OUT defaults to /tmp/gpu_check_out)
#
# 1. nvidia-smi; 2. installs the wheels carried in .whl/ (git-ignored; what the machine lacks or has too old:
# transformers>=5.24, gymnasium, pettingzoo, reasoning-gym, ...) into $GPUCHECK_SITE (default /tmp/site) and
# puts it and the checkout on PYTHONPATH (rsim runs from the working tree, not installed); if the machine's
# own peft/accelerate then fail to import, installs .whl/fallback/ too; 3. runs tools/gpu_check.py under one
# overall timeout. Without a CUDA device (CUDA_VISIBLE_DEVICES=) the same steps run on the CPU: a dry run.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
[ -d rsim_env ] || { echo "gpu_check.sh: run it from the rsim repo root (no rsim_env/ in $PWD)"; exit 2; }
OUT=${OUT:-/tmp/gpu_check_out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu_check.log") 2>&1
TEE=$!
export PYTHONUNBUFFERED=1 PYTHONHASHSEED=0 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} GPUCHECK_TEED=1
PY=${PYTHON:-python3}
BUDGET=${GPUCHECK_BUDGET_S:-240}
echo "== gpu_check.sh $(date -u +%FT%TZ) on $(hostname); $($PY --version 2>&1); git $(git rev-parse --short HEAD 2>/dev/null)"
timeout 20 nvidia-smi || echo "== nvidia-smi: not available"
SITE=${GPUCHECK_SITE:-/tmp/site}
if ls .whl/*.whl >/dev/null 2>&1; then
  t0=$SECONDS
  timeout 120 $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
    && echo "== installed $(ls .whl/*.whl | wc -l) carried wheels into $SITE in $((SECONDS - t0)) s" \
    || { echo "== bulk wheel install FAILED (rc $?): one wheel at a time"
         for w in .whl/*.whl; do timeout 60 $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
           --upgrade --target "$SITE" "$w" >/dev/null 2>&1 || echo "== FAILED to install $w"; done; }
  export PYTHONPATH=$SITE:$PWD
else
  echo "== no .whl/ wheels: using the machine's packages"
  export PYTHONPATH=$PWD
fi
if ! timeout 90 $PY -c "import transformers, peft, accelerate" 2>"$OUT/import_err.txt"; then
  echo "== import transformers/peft/accelerate failed:"; tail -5 "$OUT/import_err.txt"
  if ls .whl/fallback/*.whl >/dev/null 2>&1; then
    timeout 60 $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
      .whl/fallback/*.whl && echo "== installed fallback wheels: $(ls .whl/fallback)"
  fi
fi
rm -f "$OUT/import_err.txt"
timeout $((BUDGET + 60)) $PY "$HERE/gpu_check.py" --out "$OUT" --budget-s "$BUDGET" ${GPUCHECK_ONLY:+--only "$GPUCHECK_ONLY"}
rc=$?
echo "== gpu_check.sh exit $rc (0: every step passed; 124: the overall timeout)"
exec >&- 2>&-
wait "$TEE" 2>/dev/null  # the log's last lines are written before the command returns
exit $rc
