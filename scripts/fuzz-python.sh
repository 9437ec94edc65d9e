#!/usr/bin/env bash
# Fuzzes the Python package's readers with atheris (libFuzzer for Python):
# scripts/fuzz-python.sh [SECONDS per target, default 600] [TARGET...]
# (default: llama2c tokenizer; the harnesses are fuzz/python/fuzz_TARGET.py).
#
# Each target starts from its seeds in fuzz/python/corpus/TARGET and keeps
# what it finds in build/fuzz-python/corpus/TARGET, so later runs go on from
# there. An input that raises anything but GPTQError, hangs (over 10 s) or
# needs over 2 GiB is written to build/fuzz-python/crashes/TARGET/; the
# script exits non-zero when any run found one. Each target's executions,
# rate and memory are printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(llama2c tokenizer)
case "$seconds" in
  '' | *[!0-9]*) echo "fuzz-python: error: SECONDS must be a whole number, found '$seconds'" >&2; exit 1 ;;
esac
if ! .venv/bin/python -c "import atheris" 2>/dev/null; then
  echo "fuzz-python: error: atheris is not installed in .venv (run scripts/setup.sh)" >&2
  exit 1
fi

work=build/fuzz-python
status=0
summary=()
for t in "${targets[@]}"; do
  harness=fuzz/python/fuzz_$t.py
  if [ ! -f "$harness" ] || [ ! -d "fuzz/python/corpus/$t" ]; then
    echo "fuzz-python: error: no fuzz target '$t' (expected llama2c or tokenizer)" >&2
    exit 1
  fi
  corpus=$work/corpus/$t
  crashes=$work/crashes/$t
  log=$work/fuzz-$t.log
  mkdir -p "$corpus" "$crashes"
  echo "fuzz-python: $t for $seconds s (log $log)" >&2
  # The first folder receives new inputs; the seeds are only read.
  .venv/bin/python "$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" "fuzz/python/corpus/$t" >"$log" 2>&1
  rc=$?
  found=$(find "$crashes" -type f | wc -l)
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "fuzz-python: $t: exit status $rc, $found input(s) in $crashes" >&2
    status=1
  fi
  summary+=("$t: $(grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb' "$log" | tr -s ' ' | tr '\n' ' ')")
done
printf '%s\n' "${summary[@]}"
exit $status
