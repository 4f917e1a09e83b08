#!/usr/bin/env bash
# Part 6 on a GPU (issue 6): the hidden suite's CUDA agreement tests against the reference, correct
# variants and known bugs, then the attention benchmark on the GPU. Needs a CUDA GPU; run from anywhere:
#
#     benchmarks/gpu_check.sh                              # python3 must be a CUDA build of torch
#     PYTHON=.venv/bin/python benchmarks/gpu_check.sh      # another interpreter
#     RESULTS_DIR=/some/folder benchmarks/gpu_check.sh     # keep the logs, the table and the plot there
#     JOBS=1 benchmarks/gpu_check.sh                       # one pytest run at a time (default 4 share the GPU)
#
# For each submission it runs `python -m pytest grading_tests -k cuda --submission DIR` (the tests of
# grading_tests/test_part6_cuda.py) and prints passed/failed/skipped. It fails (exit 1) when:
#   - there is no CUDA GPU (nothing is skipped silently: it stops before running anything);
#   - the emulated device's fidelity catalogue does not run on CUDA with the CPU's values;
#   - the reference or a correct variant fails any test, or runs none;
#   - a known bug fails no test;
#   - a test is skipped for any reason other than "this SDPA backend cannot run these inputs";
#   - the benchmark fails;
#   - the engine with --gpu (benchmarks/gpu_engine_zoo.py --gpu --quick) grades a submission wrongly, runs no
#     CUDA test in a sandbox, or gives an adversarial submission what it must not.
# Skipped backends are listed with their reasons, so what was not checked is visible.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
RESULTS_DIR="${RESULTS_DIR:-$WORK/results}"
mkdir -p "$RESULTS_DIR"
RESULTS_DIR="$(cd "$RESULTS_DIR" && pwd)"

# Correct solutions written differently from the reference (autograder/zoo/variants.py): must pass everything.
VARIANTS=(finfo-min-fill where-fill hand-written-stable-softmax fused-float-additive-mask scale-q-first
          loop-over-heads materialised-expanded-mask)
# Known bugs (autograder/zoo/bugs.py) the CUDA tests must catch. The two *-default-device bugs and
# fused-float32-additive-mask create a tensor on the CPU, which only a GPU exposes (the CPU suite cannot);
# fused-mask-and-is-causal-together fails where the math backend is forced.
BUGS=(no-scale fill-minus-1e9 causal-mask-on-default-device fused-ignores-padding fused-inverted-mask
      fused-mask-and-is-causal-together fused-causal-mask-on-default-device fused-float32-additive-mask)

if ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu_check: FAILED: $PYTHON sees no CUDA GPU (torch.cuda.is_available() is False, or torch is missing)." >&2
    echo "gpu_check: nothing was checked. Run this on a machine with a GPU and a CUDA build of torch." >&2
    exit 1
fi
"$PYTHON" -c 'import torch; print(f"gpu_check: torch {torch.__version__}, {torch.cuda.get_device_name()}, work folder '"$WORK"'")'

PROBLEMS=()
SUMMARY=()
# The emulated device's fidelity catalogue (tests/test_emulated_fidelity.py) on the real GPU: every factory and
# operator it holds the stand-in to must run on CUDA with the CPU's values too. A mismatch is a problem of the
# stand-in, not of the grading below, which runs all the same (on an H200 with torch 2.11 it stopped the whole
# check before anything was graded).
if ! "$PYTHON" -m pytest -q -p no:cacheprovider tests/test_emulated_fidelity.py -k cuda -rs \
        >"$RESULTS_DIR/fidelity-cuda.log" 2>&1; then
    tail -n 25 "$RESULTS_DIR/fidelity-cuda.log"
    PROBLEMS+=("fidelity: the emulated device's catalogue differs from CUDA (see $RESULTS_DIR/fidelity-cuda.log)")
fi

# The submission folders, as tests/test_cuda_tolerance.py builds them (autograder.samples.write_submission).
"$PYTHON" - "$WORK/subs" "${VARIANTS[@]}" -- "${BUGS[@]}" <<'PY'
import sys
from autograder.samples import write_submission
from autograder.zoo.bugs import BUGS
from autograder.zoo.variants import VARIANTS

root, names = sys.argv[1], sys.argv[2:]
samples = {sample.name: sample for sample in BUGS + VARIANTS}
write_submission(f"{root}/reference", solution=True)
for name in names:
    if name == "--":
        continue
    if name not in samples:
        sys.exit(f"gpu_check: {name!r} is not in autograder/zoo (bugs.py, variants.py)")
    write_submission(f"{root}/{name}", overrides=samples[name].overrides)
PY

# passed failed skipped, and one line per skip reason, from a JUnit report.
count() {
    "$PYTHON" - "$1" <<'PY'
import collections, sys
import xml.etree.ElementTree as ET

cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
skips = [c.find("skipped").get("message", "") for c in cases if c.find("skipped") is not None]
print(len(cases) - failed - len(skips), failed, len(skips))
for reason, n in collections.Counter(skips).most_common():
    print(f"{n:4} skipped: {reason}")
PY
}

# Start one submission's CUDA tests in the background; its exit status lands in $WORK/rc-NAME.
start_suite() {
    local name="$1"
    (
        rc=0
        "$PYTHON" -m pytest grading_tests -k cuda --submission "$WORK/subs/$name" -q -p no:cacheprovider \
            --junitxml="$WORK/junit-$name.xml" >"$RESULTS_DIR/pytest-$name.log" 2>&1 || rc=$?
        echo "$rc" >"$WORK/rc-$name"
    ) &
}

# Judge one finished run: expectation pass (a correct submission) or fail (a known bug).
judge_suite() {
    local name="$1" expect="$2" xml="$WORK/junit-$1.xml" log="$RESULTS_DIR/pytest-$1.log" rc
    rc="$(cat "$WORK/rc-$name" 2>/dev/null || echo missing)"
    if [[ $rc != 0 && $rc != 1 ]]; then   # 0: all passed, 1: some failed; anything else: pytest itself broke
        PROBLEMS+=("$name: pytest exited $rc (see $log)")
        SUMMARY+=("$(printf '%-36s %-5s pytest exit %s' "$name" "$expect" "$rc")")
        tail -n 20 "$log" >&2 || true
        return
    fi
    local report passed failed skipped
    report="$(count "$xml")"
    read -r passed failed skipped <<<"$(head -n 1 <<<"$report")"
    SUMMARY+=("$(printf '%-36s %-5s passed %3d  failed %3d  skipped %3d' "$name" "$expect" "$passed" "$failed" "$skipped")")
    echo "== $name (must $expect): passed $passed, failed $failed, skipped $skipped"
    tail -n +2 <<<"$report"
    if grep -v "backend cannot run these inputs" <<<"$(tail -n +2 <<<"$report")" | grep -q "skipped:"; then
        PROBLEMS+=("$name: tests were skipped for another reason than an SDPA backend's limits (see $log)")
    fi
    if [[ $expect == pass ]]; then
        if [[ $failed -ne 0 || $passed -eq 0 ]]; then
            PROBLEMS+=("$name: a correct submission must pass every CUDA test ($failed failed, $passed passed; see $log)")
            grep -E "^(FAILED|ERROR)" "$log" | head -n 10 >&2 || true
        fi
    elif [[ $failed -eq 0 ]]; then
        PROBLEMS+=("$name: a known bug passed every CUDA test (see $log)")
    fi
}

# JOBS runs at a time share the GPU (each is small); the benchmark runs alone afterwards.
JOBS="${JOBS:-4}"
for name in reference "${VARIANTS[@]}" "${BUGS[@]}"; do
    while [[ $(jobs -rp | wc -l) -ge $JOBS ]]; do wait -n || true; done
    start_suite "$name"
done
wait
judge_suite reference pass
for name in "${VARIANTS[@]}"; do judge_suite "$name" pass; done
for name in "${BUGS[@]}"; do judge_suite "$name" fail; done

# The benchmark with the reference solution: its student/ package is the one on the path.
echo "== benchmark: python handout/bench.py --device cuda (reference solution)"
bench_rc=0
(cd "$WORK/subs/reference" && PYTHONPATH="$WORK/subs/reference" "$PYTHON" "$REPO/handout/bench.py" --device cuda \
    --out "$RESULTS_DIR/bench-cuda.png" --json "$RESULTS_DIR/bench-cuda.json") | tee "$RESULTS_DIR/bench-cuda.txt" \
    || bench_rc=$?
if [[ $bench_rc -ne 0 ]]; then
    PROBLEMS+=("benchmark: python handout/bench.py --device cuda exited $bench_rc")
elif grep -qE "^  (manual|fused|SDPA): |DISAGREE" "$RESULTS_DIR/bench-cuda.txt"; then
    PROBLEMS+=("benchmark: the reference solution reported a problem (see $RESULTS_DIR/bench-cuda.txt)")
fi

# The engine on the GPU (issue 32): the zoo and the adversarial zoo through `python -m grader --gpu`, each
# submission's sandboxes on a GPU of their own, the CUDA tests run inside them (ENGINE=0 skips it).
if [[ "${ENGINE:-1}" != 0 ]]; then
    echo "== the engine with --gpu: benchmarks/gpu_engine_zoo.py --gpu --quick"
    engine_rc=0
    "$PYTHON" "$REPO/benchmarks/gpu_engine_zoo.py" --gpu --quick --out "$WORK/engine" \
        > "$RESULTS_DIR/engine-gpu.txt" 2>&1 || engine_rc=$?
    tail -n 40 "$RESULTS_DIR/engine-gpu.txt"
    if [[ $engine_rc -ne 0 ]]; then
        PROBLEMS+=("engine: python -m grader --gpu did not grade the zoo as expected (see $RESULTS_DIR/engine-gpu.txt)")
    fi
fi

echo
echo "== summary (expectation, then pytest grading_tests -k cuda counts)"
printf '%s\n' "${SUMMARY[@]}"
echo "logs, table and plot: $RESULTS_DIR"
if [[ ${#PROBLEMS[@]} -ne 0 ]]; then
    echo "gpu_check: FAILED:" >&2
    printf '  %s\n' "${PROBLEMS[@]}" >&2
    exit 1
fi
echo "gpu_check: OK"
