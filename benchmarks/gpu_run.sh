#!/usr/bin/env bash
# One device call's worth of GPU work; results land in benchmarks/results and in $OUT.
#   bash benchmarks/gpu_run.sh tests|bench|all
# Run from the project root on the GPU machine, after `source .device-kit/setup.sh`.
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/kagent-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' | tee -a "$OUT/gpu.txt"
which bwrap ncu nvcc | tee -a "$OUT/gpu.txt"
step() { echo "=== $* ($(date +%T))"; }
if [ "$1" = tests ] || [ "$1" = all ]; then
  step pytest -m gpu
  python3 -m pytest -m gpu -q -p no:cacheprovider -rA tests/ 2>&1 | tail -80 | tee "$OUT/pytest_gpu.log"
  step bench_compile
  python3 benchmarks/bench_compile.py --out compile-h200 2>&1 | tail -15 | tee "$OUT/bench_compile.log"
fi
if [ "$1" = bench ] || [ "$1" = all ]; then
  step solutions
  python3 benchmarks/bench_eval.py solutions --out eval-solutions-h200 2>&1 | tail -25 | tee "$OUT/bench_solutions.log"
  step latency
  python3 benchmarks/bench_eval.py latency --baselines eager --out eval-latency-h200 2>&1 | tail -8 | tee "$OUT/bench_latency.log"
  step stability
  python3 benchmarks/bench_eval.py stability --baselines eager --out eval-stability-h200 2>&1 | tail -8 | tee "$OUT/bench_stability.log"
  step ncu
  python3 benchmarks/bench_eval.py ncu --baselines eager --out eval-ncu-h200 2>&1 | tail -12 | tee "$OUT/bench_ncu.log"
fi
step done
tar czf "$OUT/results.tgz" benchmarks/results
