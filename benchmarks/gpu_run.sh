#!/usr/bin/env bash
# GPU work for one device call; results land in benchmarks/results and in $OUT/results.tgz.
#   source .device-kit/setup.sh && bash benchmarks/gpu_run.sh MODE [MODE...]
# Several modes run in one call in the order of this file. Modes by purpose:
#   tests      the evaluator's GPU tests (JUnit) and the CUDA exploit table, then skill latency
#   tests-build  every other GPU test (builds, libraries, the bundled solutions' compile test)
#   calibrate  the precision calibration on cuda (scripts/calibrate_precision.py); CAL_BG=1 runs it beside the next modes
#   probes     NVML's per-process samples with another process on the GPU; conv problems' time by cuDNN algorithm choice
#   reference  kagent bench --reference over the bundled problems: every bundled solution's final reward
#   library    the library solutions (LIB: problem names): kernel breakdown beside eager, then kagent bench --reference on them
#   audit      the kernel audit on cuda: the cheat it catches, the fair swish, every reference solution (profiled/judged ratios)
#   sharing    the shared-GPU check's GPU tests alone (their spinners would skew any timing beside them)
#   tests-eval the evaluator's GPU tests (two JUnit files) and skill latency
#   checks     the evaluator's GPU tests but the reference solutions (audit runs those), then skill latency
#   l2         the persisting-L2 cheat fixture (flag, and the harness's reset with the static check off) and the card's L2 limits
#   perf       skill latency from the warm pool and the timing CV of 10 profiles (bench_eval.py latency, stability)
#   rest       library builds, level-3 solutions, the cold load_inline test; latency; CV of 10 profiles
#   trust      the clock and thread checks and fair kernels on cuda, the load_inline cache; latency; CV of 10 profiles
#   kernelbench  KernelBench L1-L3 at their own sizes, each problem's Model as its solution
#   parity     the same torch code as candidate and as eager baseline (probe_parity.py; PAR_ARGS: its options); latency; CV of 10 profiles (NO_LATENCY=1: neither)
#   kb-refmodel  kagent bench --reference-model over a KernelBench level (KB_LEVEL, default level1): every row correct, speedup about 1 (resumable; KBREF_ARGS=--retry-faults grades kept faults again)
#   inline     a load_inline file per KernelBench problem through kagent bench: the build-ahead pool and grading time
#   bench      timing stability, the solutions table, ncu
#   fair       the same solution graded 10 times quiet and under 8 compiles (repeatability)
#   ipc        which CUDA IPC transport crosses the sandbox, and its per-call latency
#   stability  timing stability and sandbox overhead
#   compile    build latency
#   train      the trainer's step and the runtime's GPU slot occupancy
#   e2e        kagentd end to end on cuda
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/kagent-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee -a "$OUT/gpu.txt"  # -a: a second invocation into the same $OUT keeps the first one's lines
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' | tee -a "$OUT/gpu.txt"
# results are named by the card that made them (h100, h200): timings compare only within one card
G=${GPU_TAG:-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE 'h100|h200|a100|l40s|b200' | tr A-Z a-z)}
G=${G:-gpu}; echo "results tag: $G" | tee -a "$OUT/gpu.txt"
MODES=" $* "
is() { case "$MODES" in *" $1 "*) return 0;; esac; return 1; }
step() { echo "=== $1 ($(date +%T))"; }
# SIGINT first: pytest then still writes its JUnit file, a benchmark its partial JSON
# DEADLINE (epoch seconds, e.g. $(( $(date +%s) + 570 ))) caps every step so that the call ends in time
run() { local t=$1 log=$2; shift 2
  if [ -n "${DEADLINE:-}" ]; then local left=$(( DEADLINE - $(date +%s) )); [ "$left" -lt "$t" ] && t=$left
    [ "$t" -gt 10 ] || { echo "skipped $log: DEADLINE reached" | tee "$OUT/$log"; return; }; fi
  timeout -s INT -k 20 "$t" "$@" > "$OUT/$log" 2>&1; echo "exit $?" >> "$OUT/$log"; tail -"${TAIL:-25}" "$OUT/$log"; }
preflight() {  # one sandboxed GPU evaluation; fall back (and say so) if the sandbox cannot reach the GPU
  local sol=problems/solutions/cuda/level1/02_swish
  if python3 -m runtime.cli eval problems/level1/02_swish.py $sol --mode test > "$OUT/preflight.log" 2>&1; then
    echo "preflight: sandbox as nobody OK"; return; fi
  tail -20 "$OUT/preflight.log"; export KAGENT_SANDBOX_KEEP_UID=1
  if python3 -m runtime.cli eval problems/level1/02_swish.py $sol --mode test >> "$OUT/preflight.log" 2>&1; then
    echo "preflight: sandbox OK only without the uid switch (KAGENT_SANDBOX_KEEP_UID=1)"; return; fi
  tail -20 "$OUT/preflight.log"; export KAGENT_UNSAFE_NO_SANDBOX=1 KAGENT_SANDBOX_MODE=none
  echo "preflight: SANDBOX FAILED ON GPU; continuing unsandboxed"
}
step preflight; preflight
# The whole GPU suite no longer fits one call (70 tests: 45 ran in 420 s on 2026-12-03): `tests` runs
# the evaluator's GPU files (the exploit table reads them), `tests-build` every other GPU test.
EVAL_GPU_TESTS="tests/skills/evaluator/test_gpu_eval.py tests/skills/evaluator/test_gpu_trust.py tests/skills/evaluator/test_gpu_memory.py"
if is calibrate; then  # judged on precision only, no clock: CAL_BG=1 lets it overlap the builds of tests-build
  step calibrate
  cal() { TAIL=12 run "${T_CAL:-420}" calibrate.log python3 scripts/calibrate_precision.py --device cuda --jobs "${CAL_JOBS:-4}" ${CAL_OUT:+--out $CAL_OUT} ${CAL_ONLY:+--only $CAL_ONLY}; }
  if [ -n "${CAL_BG:-}" ]; then cal & CAL_PID=$!; else cal; fi
fi
if is probes; then  # evidence for the shared-GPU check and for the library solutions (PROBE_COMPILE: problems also timed under torch.compile)
  step probe-sharing; TAIL=20 run 120 probe_sharing.log python3 benchmarks/probe_gpu_sharing.py
  step probe-conv; TAIL=16 run "${T_PROBE:-150}" probe_conv.log python3 benchmarks/probe_conv_algos.py
  [ -z "${PROBE_COMPILE:-}" ] || { step probe-compile; TAIL=16 run "${T_PROBE_COMPILE:-240}" probe_compile.log python3 benchmarks/probe_conv_algos.py --compile --out conv-algos-compile-$G $PROBE_COMPILE; }
fi
LIB=${LIB:-"level2/07_conv_batchnorm_relu level2/15_conv_gelu_global_avgpool level2/19_pointwise_conv_hardswish_residual level2/21_conv_relu_bias_add level3/06_resnet_basic_block level3/07_small_cnn level3/08_tiny_vgg level3/09_depthwise_separable_block"}
if is library; then  # where each library solution's time goes, then the reward the evaluator gives it
  step probe-solutions; TAIL=12 run "${T_LIBPROBE:-200}" probe_solutions.log python3 benchmarks/probe_solution_kernels.py $LIB --out "${LIB_PROBE_OUT:-solution-kernels-$G}"
  [ "${LIB_BENCH:-1}" = 0 ] || { step bench-library; TAIL=40 run "${T_LIB:-300}" bench_library.log python3 -m runtime.cli bench $(for p in $LIB; do echo "problems/$p.py"; done) --reference --backend cuda --no-progress --out "${LIB_OUT:-benchmarks/results/bench-library-$G}"; }
fi
if is tests-build; then  # GPU tests outside the evaluator's files: builds, libraries, the bundled solutions' compile test
  step pytest-build; TAIL=40 run "${T_BUILD:-480}" pytest_gpu_build.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 150 ${BUILD_JOBS:+-n $BUILD_JOBS -p no:benchmark} ${BUILD_K:+-k "$BUILD_K"} --junitxml=benchmarks/results/gpu-junit-build-$G.xml tests/ $(for f in $EVAL_GPU_TESTS; do echo --ignore=$f; done)
fi
[ -z "${CAL_PID:-}" ] || { step wait-calibrate; wait "$CAL_PID"; CAL_PID=; }  # nothing timed runs beside it
if is tests; then
  python3 -c 'import skills.evaluator.harness.timing as t; print("persisting-L2 reset:", t.reset_l2)' | tee -a "$OUT/gpu.txt"
  step pytest; TAIL=60 run "${T_TESTS:-450}" pytest_gpu.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 150 --junitxml=benchmarks/results/gpu-junit-$G.xml $EVAL_GPU_TESTS
  step exploits; TAIL=6 run 15 exploits.log python3 scripts/exploit_table.py --gpu-only --gpu-report benchmarks/results/gpu-junit-$G.xml --out exploits-$G
  [ -n "${NO_LATENCY:-}" ] || { step latency; TAIL=8 run 75 bench_latency.log python3 benchmarks/bench_eval.py latency --baselines eager --repeats 2 --out eval-latency-$G; }
fi
if is audit; then  # the kernel audit (Nsight Compute outside the candidate): the watched-only cheat and the fair swish first, then every reference solution (profiled/judged ratios)
  # AUDIT_CHEAT=0: the checks mode of the same machine ran these already
  [ "${AUDIT_CHEAT:-1}" = 0 ] || { step pytest-audit-cheat; TAIL=20 run "${T_AUDIT_CHEAT:-120}" pytest_gpu_audit_cheat.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 150 --junitxml=benchmarks/results/gpu-junit-audit-cheat-$G.xml tests/skills/evaluator/test_gpu_eval.py -k "watched or fair_swish or forged"; }
  if grep -qs "cannot list kernels" "$OUT/pytest_gpu_audit_cheat.log"; then echo "audit: ncu unusable in the sandbox, reference solutions not audited"; else
  step pytest-audit; TAIL=40 run "${T_AUDIT:-420}" pytest_gpu_audit.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 150 --junitxml=benchmarks/results/gpu-junit-audit-$G.xml tests/skills/evaluator/test_gpu_eval.py -k "reference_solution ${AUDIT_K:+and ($AUDIT_K)}"
  step audit-ratios; TAIL=30 run 30 audit_ratios.log python3 benchmarks/audit_ratios.py benchmarks/results/gpu-junit-audit-$G.xml --out audit-ratios-$G
  fi
fi
if is tests-eval; then  # the evaluator's GPU tests in two JUnit files (each survives the other's timeout), latency, the memory plan's hard cases
  step pytest-solutions; TAIL=30 run "${T_SOL:-300}" pytest_gpu_solutions.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 150 --junitxml=benchmarks/results/gpu-junit-solutions-$G.xml tests/skills/evaluator/test_gpu_eval.py -k reference_solution
  step pytest-checks; TAIL=30 run "${T_CHK:-330}" pytest_gpu_checks.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 150 --junitxml=benchmarks/results/gpu-junit-checks-$G.xml tests/skills/evaluator/test_gpu_eval.py tests/skills/evaluator/test_gpu_trust.py tests/skills/evaluator/test_gpu_memory.py -k "not reference_solution"
  [ -n "${NO_LATENCY:-}" ] || { step latency; TAIL=8 run 75 bench_latency.log python3 benchmarks/bench_eval.py latency --baselines eager --repeats 2 --out eval-latency-$G; }
fi
if is checks; then  # the evaluator's GPU tests but the reference solutions (the audit mode runs those): cheats, fair kernels, memory plan; latency
  step pytest-checks; TAIL=30 run "${T_CHK:-330}" pytest_gpu_checks.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 150 --junitxml=benchmarks/results/gpu-junit-checks-$G.xml $EVAL_GPU_TESTS -k "not reference_solution"
  [ -n "${NO_LATENCY:-}" ] || { step latency; TAIL=8 run 75 bench_latency.log python3 benchmarks/bench_eval.py latency --baselines eager --repeats 2 --out eval-latency-$G; }
fi
if is l2; then  # the persisting-L2 fixtures, and what the card allows (attributes 108/109: max persisting L2, max access-policy window)
  python3 -c 'import cupy as c; d=c.cuda.runtime; print("l2 bytes", d.deviceGetAttribute(38, 0), "max persisting L2", d.deviceGetAttribute(108, 0), "max window", d.deviceGetAttribute(109, 0))' | tee -a "$OUT/gpu.txt"
  step pytest-l2; TAIL=20 run "${T_L2:-120}" pytest_gpu_l2.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 100 --junitxml=benchmarks/results/gpu-junit-l2-$G.xml tests/skills/evaluator/test_gpu_eval.py -k l2_persistence
fi
if is perf; then  # issue 13's performance line: run_tests / profile latency from the warm pool, timing CV of 10 profiles
  step latency; TAIL=8 run 75 bench_latency.log python3 benchmarks/bench_eval.py latency --baselines eager --repeats 2 --out eval-latency-$G
  step stability; TAIL=8 run "${T_STAB:-100}" bench_stability.log python3 benchmarks/bench_eval.py stability --baselines eager --variants lead+pool --loaded none --runs 10 --out eval-stability-$G
fi
if is rest; then  # what tests-eval leaves: library builds on the GPU, level-3 solutions, the cold load_inline test; latency; timing CV of 10 profiles
  step pytest-rest; TAIL=30 run "${T_REST:-150}" pytest_gpu_rest.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 100 --junitxml=benchmarks/results/gpu-junit-rest-$G.xml tests/skills/evaluator/test_build_libraries.py "tests/skills/evaluator/test_gpu_eval.py::test_reference_solution_passes_and_beats_eager[level3/02_gru_seq]" "tests/skills/evaluator/test_gpu_eval.py::test_reference_solution_passes_and_beats_eager[level3/03_mlp_block]" "tests/skills/evaluator/test_gpu_eval.py::test_reference_solution_passes_and_beats_eager[level3/07_small_cnn]" tests/skills/evaluator/test_gpu_trust.py::test_load_inline_cache_on_cuda
  step latency; TAIL=8 run 70 bench_latency.log python3 benchmarks/bench_eval.py latency --baselines eager --repeats 2 --out eval-latency-$G
  step stability; TAIL=8 run "${T_STAB:-90}" bench_stability.log python3 benchmarks/bench_eval.py stability --baselines eager --variants lead+pool --loaded none --runs 10 --out eval-stability-$G
fi
if is trust; then  # the trust boundary on cuda: each cheat its check catches, fair kernels through the same checks
  step pytest-trust; TAIL=30 run "${T_TRUST:-210}" pytest_gpu_trust.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 120 --junitxml=benchmarks/results/gpu-junit-trust-$G.xml tests/skills/evaluator/test_gpu_trust.py tests/skills/evaluator/test_gpu_eval.py -k "(fair or moved or fake_clock or lead_hides or side_stream or frame or partial or (reference_solution and level1)) and not load_inline"
  step pytest-ext-cache; TAIL=20 run "${T_EXT:-170}" pytest_gpu_ext_cache.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 165 --junitxml=benchmarks/results/gpu-junit-ext-cache-$G.xml tests/skills/evaluator/test_gpu_trust.py::test_load_inline_cache_on_cuda
  step latency; TAIL=8 run 60 bench_latency.log python3 benchmarks/bench_eval.py latency --baselines eager --repeats 2 --out eval-latency-$G
  step stability; TAIL=8 run "${T_STAB:-90}" bench_stability.log python3 benchmarks/bench_eval.py stability --baselines eager --variants lead+pool --loaded none --runs 10 --out eval-stability-$G
fi
if is kernelbench; then  # every KernelBench file at its own sizes, its own Model as the solution (KB: the folder on the device)
  step kernelbench; TAIL=30 run "${KB_SECONDS:-500}" bench_kernelbench.log python3 benchmarks/bench_kernelbench.py ${KB:-../shared/kernelbench} --jobs "${KB_JOBS:-1}" --out "${KB_OUT:-kernelbench-$G}" ${KB_RESUME:+--resume $KB_RESUME} ${KB_ARGS:-}
fi
if is kb-refmodel; then  # issue 19's table: a KernelBench level with each problem's own Model as its solution (resumable: the --out folder)
  step kb-refmodel; TAIL=30 run "${T_KBREF:-540}" bench_kb_refmodel.log python3 -m runtime.cli bench ${KB:-../shared/kernelbench}/${KB_LEVEL:-level1} --reference-model --backend cuda --no-progress --out "${KBREF_OUT:-benchmarks/results/bench-kernelbench-${KB_LEVEL:-level1}-refmodel-$G}" ${KBREF_ARGS:-}
fi
if is inline; then  # a load_inline file per KernelBench problem, built ahead and graded by kagent bench (resumable: INLINE_OUT)
  step inline-set; python3 benchmarks/make_inline_set.py ${KB:-../shared/kernelbench} --out "${INLINE_SET:-/tmp/kb-inline}"
  step inline-bench; TAIL=30 run "${T_INLINE:-540}" bench_inline.log python3 -m runtime.cli bench ${KB:-../shared/kernelbench} --solutions "${INLINE_SET:-/tmp/kb-inline}" --set scheduler.eval.torch_allowed=true --no-progress --out "${INLINE_OUT:-benchmarks/results/kb-inline-$G}"
fi
if is reference; then  # kagent bench --reference: the bundled solutions' final rewards, table.md and speedup.png
  step reference; TAIL=30 run "${T_REF:-330}" bench_reference.log python3 -m runtime.cli bench problems --reference --backend cuda --no-progress --out "${REF_OUT:-benchmarks/results/bench-reference-$G}"
fi
if is parity; then  # why the problem's own Model reads slower as the candidate than as the eager baseline
  step parity; TAIL=40 run "${T_PAR:-320}" probe_parity.log python3 benchmarks/probe_parity.py ${KB:-../shared/kernelbench} --problems ${PAR_PROBLEMS:-level2/10_ level1/4_ level1/96_ level1/94_ level1/99_ level1/88_} ${PAR_ARGS:-} --out parity-$G
  if [ -z "${NO_LATENCY:-}" ]; then
    step latency; TAIL=8 run 60 bench_latency.log python3 benchmarks/bench_eval.py latency --baselines eager --repeats 2 --out eval-latency-$G
    step stability; TAIL=8 run "${T_STAB:-150}" bench_stability.log python3 benchmarks/bench_eval.py stability --baselines eager --variants lead+pool --loaded none --runs 10 --out eval-stability-$G
  fi
fi
if is bench; then
  step stability; TAIL=8 run 150 bench_stability.log python3 benchmarks/bench_eval.py stability --baselines eager --out eval-stability-$G
  step solutions; TAIL=20 run 300 bench_solutions.log python3 benchmarks/bench_eval.py solutions --out eval-solutions-$G
  step ncu; TAIL=14 run 60 bench_ncu.log python3 benchmarks/bench_eval.py ncu --baselines eager --out eval-ncu-$G
fi
if is fair; then
  step repeat-quiet; TAIL=16 run 200 bench_repeat_quiet.log python3 benchmarks/bench_eval.py repeatability --runs 10 --out eval-repeatability-quiet-$G
  step repeat-compiles; TAIL=16 run 260 bench_repeat_compiles.log python3 benchmarks/bench_eval.py repeatability --runs 10 --load compiles --compiles 8 --out eval-repeatability-compiles-$G
fi
if is ipc; then
  step ipc; TAIL=40 run 300 cuda_ipc_probe.log python3 benchmarks/cuda_ipc_probe.py --out benchmarks/results/cuda-ipc-probe-$G.json
fi
if is stability; then
  step stability; TAIL=8 run 270 bench_stability.log python3 benchmarks/bench_eval.py stability --baselines eager --out eval-stability-$G
  step sandbox; TAIL=8 run 90 bench_sandbox.log python3 benchmarks/bench_sandbox.py --backend cuda --repeats 10 --out sandbox-overhead-$G
fi
if is compile; then
  step compile; TAIL=12 run 110 bench_compile.log python3 benchmarks/bench_compile.py --out compile-$G
fi
if is train; then  # trainer step benchmark, then GPU slot occupancy of the runtime
  python3 -c 'import transformers, peft, accelerate; print("transformers", transformers.__version__, "peft", peft.__version__, "accelerate", accelerate.__version__)' | tee -a "$OUT/gpu.txt"
  step trainer; TAIL=30 run 280 bench_trainer.log python3 benchmarks/bench_trainer.py
  step gpu-busy; TAIL=20 run 200 bench_runtime_gpu.log python3 benchmarks/bench_runtime.py --gpu-busy --seconds 100 --warmup 45 --gpu-slots 1 --in-flight 8 --baselines eager
fi
if is e2e; then  # kagentd end to end on cuda: openai client -> scripted policy -> skills -> verified answer
  step service; TAIL=60 run 330 bench_service_cuda.log python3 benchmarks/bench_service.py --backend cuda --requests 2
fi
if is sharing; then  # after everything timed: the tests start processes that keep the GPU busy
  step pytest-sharing; TAIL=30 run "${T_SHARE:-150}" pytest_gpu_sharing.log python3 -m pytest -m gpu -q -p no:cacheprovider -rA --timeout 120 --junitxml=benchmarks/results/gpu-junit-sharing-$G.xml tests/skills/evaluator/test_gpu_sharing.py
fi
step done
tar czf "$OUT/results.tgz" benchmarks/results
# a call returns at most 8 files: past 7, the logs travel as one archive
# (written beside $OUT, then moved in: tar of a folder it writes into fails with "file changed as we read it")
if [ "$(ls "$OUT" | wc -l)" -gt 7 ]; then
  (cd "$OUT" && tar czf "$OUT.logs.tgz" --exclude results.tgz --exclude gpu.txt . \
    && find . -mindepth 1 -maxdepth 1 ! -name results.tgz ! -name gpu.txt -exec rm -rf {} + && mv "$OUT.logs.tgz" logs.tgz)
fi
