#!/usr/bin/env bash
# Check and benchmark the Triton DP kernels on a CUDA machine, in one go (one device-tool call).
# Expects torchmsa installed non-editable (so torchmsa._triton exists) ahead of the checkout on
# PYTHONPATH, e.g. PYTHONPATH=/tmp/site:$PWD; `python3 -P` keeps the checkout's torchmsa/ from
# shadowing it. Logs and results go to $OUT (default /tmp/gpu_check).
# usage: bash benchmarks/gpu_check.sh [env] [bench] [sweep] [long] [tests] [ncu]
#   (default: env bench sweep tests); long: the single 10,000-residue pair and its shape sweep
# Stages run in that order whatever order they are named in.
set -uo pipefail
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
stages=${*:-env bench sweep tests}
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
status=0
has() { [[ " $stages " == *" $1 "* ]]; }
if has env; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total \
    --format=csv 2>&1 | tee "$OUT/env.log"
  python3 -P -c "import torch, triton, torchmsa._triton.dp as d; print('torch', torch.__version__,
'triton', triton.__version__, torch.cuda.get_device_name(), d.__file__)" 2>&1 | tee -a "$OUT/env.log"
fi
if has bench || has sweep; then
  extra=$(has sweep && echo --sweep)
  python3 -P -m benchmarks.pairwise_gpu --out "$OUT" $extra 2>&1 | tee "$OUT/bench.log" \
    || status=1
fi
if has long; then
  python3 -P -m benchmarks.pairwise_gpu --long-only --sweep --out "$OUT" 2>&1 \
    | tee "$OUT/long.log" || status=1
fi
if has tests; then
  timeout "${TEST_TIMEOUT:-300}" python3 -P -m pytest -q -p no:cacheprovider -n 4 \
    --durations=15 tests/test_triton_dp.py 2>&1 | tee "$OUT/pytest.log" || status=1
fi
if has ncu; then
  ncu --clock-control none -k regex:_dp_fill_kernel -c 1 --section SpeedOfLight \
    --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats \
    --section WarpStateStats --section LaunchStats \
    python3 -P -m benchmarks.pairwise_gpu --pairs 10000 --repeats 1 --cpu-repeats 1 \
    --out /tmp/ncu_run 2>&1 | tail -150 | tee "$OUT/ncu.log" || status=1
fi
exit $status
