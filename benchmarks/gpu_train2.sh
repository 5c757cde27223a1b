#!/usr/bin/env bash
# The trainer benchmark on two GPUs, for one device call on the 2 x H200 machine (nvidia-h200-x2):
#   source .device-kit/setup.sh && bash benchmarks/gpu_train2.sh
# (a) DDP: plain step + PPO update on 2 GPUs through accelerate, scaling efficiency against the 1-GPU
#     result committed in benchmarks/results/trainer-h200.json -> benchmarks/results/trainer-h200x2.json
# (b) the same under FSDP2 (--fsdp; no --compile part)   -> benchmarks/results/trainer-h200x2-fsdp.json
# Logs in $OUT, benchmarks/results in $OUT/results.tgz. Each step has a timeout (270 s, 150 s, +10 s
# grace each), so the script ends within ~460 s; the benchmark rewrites its JSON after every part, so
# a step cut short still leaves the parts it measured ("finished": false).
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/kagent-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
nvidia-smi topo -m 2>&1 | head -6 | tee -a "$OUT/gpu.txt"
python3 -c 'import torch, transformers, peft, accelerate; print("torch", torch.__version__, torch.cuda.device_count(), "x", torch.cuda.get_device_name(0), "transformers", transformers.__version__, "peft", peft.__version__, "accelerate", accelerate.__version__)' | tee -a "$OUT/gpu.txt"
step() { echo "=== $1 ($(date +%T))"; }
run() {  # on failure also the first error lines (torchrun's summary fills the tail)
  local t=$1 log=$2 rc; shift 2; timeout -k 10 "$t" "$@" > "$OUT/$log" 2>&1; rc=$?; echo "exit $rc" >> "$OUT/$log"
  [ $rc -ne 0 ] && grep -m 8 -E 'Error|error:|^--' "$OUT/$log"; tail -"${TAIL:-25}" "$OUT/$log"; }
SINGLE=${SINGLE:-benchmarks/results/trainer-h200.json}
EXTRA=${EXTRA:-}  # more flags for both steps, e.g. --no-compile (saves the compile time, ~1 min on the 1-GPU run)
STEPS=${STEPS:-ddp fsdp}  # STEPS=ddp: the DDP step alone
# dry run on a CPU box: EXTRA="--tiny --results-dir /tmp/r" SINGLE=<a 1-process --tiny result> (FSDP refuses there)
# no config file, no prompt; bf16 weights as in the 1-GPU run (no autocast: --mixed_precision no)
LAUNCH="python3 -m accelerate.commands.launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no --dynamo_backend no"

if [[ " $STEPS " == *" ddp "* ]]; then
  step ddp
  export KAGENT_LAUNCH="$LAUNCH --main_process_port 29517"  # recorded as the command in the JSON
  TAIL=24 run 270 bench_trainer_x2.log $KAGENT_LAUNCH benchmarks/bench_trainer.py --single $SINGLE --out trainer-h200x2 $EXTRA
fi
if [[ " $STEPS " == *" fsdp "* ]]; then
  step fsdp
  export KAGENT_LAUNCH="$LAUNCH --main_process_port 29518"
  TAIL=22 run 150 bench_trainer_x2_fsdp.log $KAGENT_LAUNCH benchmarks/bench_trainer.py --fsdp --single $SINGLE --out trainer-h200x2-fsdp $EXTRA
fi

step done
tar czf "$OUT/results.tgz" benchmarks/results
