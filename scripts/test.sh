#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then runs every test: the lit suite
# with the GoogleTest unit tests (check-gptq) and the Python package's
# pytest suite. Ends with one summary line, "tests: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1

status=0
lit_json=$PWD/build/lit-results.json
rm -f "$lit_json"
LIT_OPTS="-sv -o $lit_json" cmake --build build --target check-gptq || status=1

pytest_log=build/pytest.log
if [ -d python/tests ]; then
  GPTQ_MLIR_CACHE_DIR=$PWD/build/compile-cache PYTHONPATH=python \
    .venv/bin/python -m pytest -q python/tests 2>&1 | tee "$pytest_log"
  rc=${PIPESTATUS[0]}
  # 5: pytest collected nothing, which is no failure of the suite.
  [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] || status=1
else
  : >"$pytest_log"
fi

.venv/bin/python - "$lit_json" "$pytest_log" <<'PY'
import json, re, sys
passed = failed = 0
try:
    for t in json.load(open(sys.argv[1]))["tests"]:
        if t["code"] in ("PASS", "XFAIL"):
            passed += 1
        elif t["code"] not in ("UNSUPPORTED",):
            failed += 1
except (OSError, ValueError, KeyError):
    failed += 1
for line in open(sys.argv[2]):
    m = re.search(r"(\d+) passed", line)
    if m and ("passed" in line and (" in " in line)):
        passed += int(m.group(1))
        f = re.search(r"(\d+) failed", line)
        failed += int(f.group(1)) if f else 0
        e = re.search(r"(\d+) error", line)
        failed += int(e.group(1)) if e else 0
print("tests: %d passed, %d failed" % (passed, failed))
PY
exit $status
