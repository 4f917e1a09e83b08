#!/usr/bin/env bash
# The hidden suite's adequacy in full (issue 19): every mutant of the reference's graded code (mutmut's
# operators, about 300), every generated adversary (computes nothing: must score at most 3) and every
# generated correct style (must score 100), graded by this checkout's engine in one batch. About 6 minutes
# on a 2-core machine; .ci/run runs a sample of it (tests/test_adequacy.py, --sample 12).
#
#     benchmarks/adequacy.sh                           # python3 must have requirements.txt installed
#     PYTHON=.venv/bin/python benchmarks/adequacy.sh   # another interpreter
#     OUT=/some/folder WORKERS=4 benchmarks/adequacy.sh
#
# Prints the mutation score, the survivors with the reason each is equivalent (autograder/adequacy/
# equivalent.py), the highest score without computing and the styles' scores, and exits 1 when any of
# them is not as it must be. OUT/adequacy.json keeps every verdict.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-$REPO/out/adequacy}"
start=$(date +%s)
status=0
"$PYTHON" -m autograder adequacy --out "$OUT" --workers "${WORKERS:-2}" || status=$?
echo "adequacy.sh: $(( $(date +%s) - start )) s in all, exit $status"
exit "$status"
