#!/usr/bin/env bash
# One call on the GPU machine: install what the offline machine lacks, then run the named stages.
# Carry .whl .devdata .debs (../shared/tools/device_prep.sh --peers --data ...). Results go to $OUT.
# usage: TORCHMSA_COMMIT=<hash> bash benchmarks/tools/device_run.sh STAGE... (set the hash here:
#   the device copy's git metadata may name an older commit; give the calls of one sharded run
#   one TORCHMSA_RUN id). Bring the files back and append them to benchmarks/results with
#   python -m benchmarks.tools.merge_results $FILES/*.csv
#   kernels   gpu tests of the Triton kernels (DP, k-mers, LCS)
#   lcs       gpu tests of the LCS kernel only
#   tree      gpu tests of the guide trees (single linkage on the GPU)
#   pipeline  gpu tests of the whole pipeline (GPU == CPU on BAliBASE; TORCHMSA_GPU_MODES)
#   pairwise  benchmarks.pairwise_gpu
#   e2e-bb    benchmarks.e2e_gpu on balibase3 (E2E_TOOLS, E2E_LIMIT, E2E_CASES, E2E_SHARD,
#             E2E_MODE, E2E_TIMEOUT, E2E_EXTRA: e.g. "--warm --config consistency.weight=16")
#   e2e-fam   benchmarks.e2e_gpu on balifam1000,balifam10000 (FAM_SETS, E2E_TOOLS, E2E_LIMIT,
#             E2E_TIMEOUT, E2E_SHARD, E2E_EXTRA)
#   kmer      benchmarks.kmer_gpu;  families  benchmarks.large_families
#   stages    benchmarks.stages (STAGE_CASES, STAGE_ARGS)
#   ab        benchmarks.tools.ab_cases --device cuda (AB_ARGS: cases, variants)
#   versions  benchmarks.tools.ab_versions: commit VERSION_BASE against this checkout
#             (VERSION_ARGS)
# Triton's kernel cache goes back as $OUT/triton_cache.tgz; name that file (carried in an
# ignored folder) in TRITON_CACHE_TGZ on the next call and a fresh machine starts with it
# (a cold cache costs minutes of compiling: README, "First run on a machine").
set -uo pipefail
OUT=${OUT:-/tmp/device_out}
mkdir -p "$OUT" /tmp/peers
# --upgrade: on a machine still warm from an earlier call, replace that call's torchmsa
python3 -m pip install -q --no-index --no-deps --no-compile --no-build-isolation --upgrade \
  --target /tmp/site .whl/*.whl . >"$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
for f in .debs/*.deb; do dpkg -x "$f" /tmp/peers; done
export PATH=/tmp/peers/usr/bin:$PATH MAFFT_BINARIES=/tmp/peers/usr/lib/mafft/lib/mafft
export LD_LIBRARY_PATH=/tmp/peers/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHMSA_BENCH_DATA=$PWD/.devdata
py() { python3 -P "$@"; }
export TRITON_CACHE_DIR=/tmp/triton_cache
mkdir -p "$TRITON_CACHE_DIR"
if [ -n "${TRITON_CACHE_TGZ:-}" ] && [ -f "$TRITON_CACHE_TGZ" ]; then
  tar xzf "$TRITON_CACHE_TGZ" -C "$TRITON_CACHE_DIR"
fi
status=0
for stage in "$@"; do
  echo "== $stage $(date +%T)"
  case $stage in
    kernels) py -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_triton_dp.py \
               tests/test_kmer_triton.py tests/test_lcs.py 2>&1 | tee "$OUT/kernels.log" | tail -15 ;;
    lcs) py -m pytest -q -p no:cacheprovider -m gpu tests/test_lcs.py 2>&1 | tee "$OUT/lcs.log" \
           | tail -15 ;;
    tree) py -m pytest -q -p no:cacheprovider -m gpu tests/test_tree.py 2>&1 \
           | tee "$OUT/tree.log" | tail -15 ;;
    pipeline) py -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_pipeline.py \
               -k "${TORCHMSA_GPU_MODES:-fast or default or auto or missing}" 2>&1 \
               | tee "$OUT/pipeline.log" | tail -15 ;;
    pairwise) py -m benchmarks.pairwise_gpu --out "$OUT" 2>&1 | tail -12 ;;
    e2e-bb) py -m benchmarks.e2e_gpu --datasets balibase3 \
              --tools "${E2E_TOOLS:-torchmsa-gpu-batch,torchmsa-gpu,torchmsa-cpu,mafft-auto,famsa,kalign,clustalo}" \
              ${E2E_EXTRA:-} --mode "${E2E_MODE:-default}" --shard "${E2E_SHARD:-0/1}" ${E2E_CASES:+--cases $E2E_CASES} \
              ${E2E_LIMIT:+--limit $E2E_LIMIT} --out "$OUT" --timeout "${E2E_TIMEOUT:-120}" 2>&1 \
              | tee "$OUT/e2e-bb.log" | grep -E "^==|Error" ;;
    e2e-fam) py -m benchmarks.e2e_gpu --datasets "${FAM_SETS:-balifam1000,balifam10000}" \
              --no-overhead ${E2E_EXTRA:-} --timeout "${E2E_TIMEOUT:-300}" --shard "${E2E_SHARD:-0/1}" \
              --tools "${E2E_TOOLS:-torchmsa-gpu-batch,torchmsa-gpu,mafft-auto,famsa,kalign,clustalo}" \
              ${E2E_LIMIT:+--limit $E2E_LIMIT} --out "$OUT" 2>&1 | tee "$OUT/e2e-fam.log" \
              | grep -E "^==|Error" ;;
    kmer) py -m benchmarks.kmer_gpu ${KMER_ARGS:-} --out "$OUT" 2>&1 | tail -20 ;;
    families) py -m benchmarks.large_families ${FAM_ARGS:---quick} --threads 16 --out "$OUT" \
              2>&1 | tail -20 ;;
    stages) py -m benchmarks.stages ${STAGE_CASES:+--cases $STAGE_CASES} ${STAGE_ARGS:-} --out "$OUT" 2>&1 \
              | tail -20 ;;
    ab) eval "py -m benchmarks.tools.ab_cases --device cuda ${AB_ARGS:-} --out \"\$OUT\"" 2>&1 \
          | tee "$OUT/ab.log" | grep -E "^==|Error" ;;
    versions) rm -rf /tmp/base_src /tmp/sitebase && mkdir -p /tmp/base_src \
              && git archive "${VERSION_BASE:?}" torchmsa triton_kernels pyproject.toml README.md \
              | tar -x -C /tmp/base_src && python3 -m pip install -q --no-index --no-deps \
              --no-compile --no-build-isolation --target /tmp/sitebase /tmp/base_src \
              >>"$OUT/install.log" 2>&1 && py -m benchmarks.tools.ab_versions \
              --version "$VERSION_BASE=/tmp/sitebase" --version "${TORCHMSA_COMMIT:-new}=/tmp/site" \
              ${VERSION_ARGS:-} --out "$OUT" 2>&1 | tee "$OUT/versions.log" | grep -E "^==|Error" ;;
    *) echo "unknown stage $stage"; status=1 ;;
  esac
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
done
[ $# -gt 0 ] && tar czf "$OUT/triton_cache.tgz" -C "$TRITON_CACHE_DIR" .
exit $status
