#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), installs the optional test
# dependencies (scripts/test-deps.sh), then runs every test: the lit suite
# with the GoogleTest unit tests (check-gptq) and the Python package's
# pytest suite. Ends with one summary line, "tests: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
# The references the optional tests compare with (transformers, AutoGPTQ, ...).
bash scripts/test-deps.sh || exit 1

status=0
lit_json=$PWD/build/lit-results.json
rm -f "$lit_json"
LIT_OPTS="-sv -o $lit_json" cmake --build build --target check-gptq || status=1

pytest_xml=$PWD/build/pytest-results.xml
rm -f "$pytest_xml"
GPTQ_MLIR_CACHE_DIR=$PWD/build/compile-cache PYTHONPATH=python \
  .venv/bin/python -m pytest -q --junitxml="$pytest_xml" python/tests
# Any other exit is a failure, 5 (nothing collected) too: the suite has
# tests, so collecting none means they were lost.
[ $? -eq 0 ] || status=1

.venv/bin/python - "$lit_json" "$pytest_xml" <<'PY'
import json, sys
import xml.etree.ElementTree as ET
passed = failed = 0
try:
    for t in json.load(open(sys.argv[1]))["tests"]:
        if t["code"] in ("PASS", "XFAIL"):
            passed += 1
        elif t["code"] not in ("UNSUPPORTED",):
            failed += 1
except (OSError, ValueError, KeyError):
    failed += 1
try:
    for s in ET.parse(sys.argv[2]).getroot().iter("testsuite"):
        n = {k: int(s.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
        passed += n["tests"] - n["failures"] - n["errors"] - n["skipped"]
        failed += n["failures"] + n["errors"]
except (OSError, ValueError, ET.ParseError):
    failed += 1
print("tests: %d passed, %d failed" % (passed, failed))
PY
exit $status
