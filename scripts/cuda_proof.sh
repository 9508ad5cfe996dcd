#!/bin/bash
# On a CUDA machine with no registry (the device tool's): install the carried wheels (.whl/, see docs/layout.md),
# then prove the CUDA path (scripts/cuda_proof.py) and run the test suite with CUDA present. Logs go to $OUT.
set -u
OUT=${OUT:-/tmp/proof}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, libcst; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
corpus=(); [ -d .proof/corpus ] && corpus=(--corpus .proof/corpus)
timeout "${PROOF_TIMEOUT:-300}" python3 scripts/cuda_proof.py "$OUT" "${corpus[@]}" > "$OUT/proof.log" 2>&1
echo "proof rc=$?"
timeout "${TESTS_TIMEOUT:-180}" python3 -m pytest -v -n 14 -p no:cacheprovider --junitxml="$OUT/junit.xml" > "$OUT/tests.log" 2>&1
echo "tests rc=$?"
grep -E "^FAIL" "$OUT/proof.log" | cut -c1-400
tail -3 "$OUT/proof.log"
grep -E "FAILED|ERROR|passed|failed" "$OUT/tests.log" | cut -c1-300 | tail -40
