#!/usr/bin/env bash
# Runs each libFuzzer target (fuzz/) for a while: scripts/fuzz.sh [SECONDS
# per target, default 600] [TARGET...] (default: npy ir).
#
# Builds the fuzzers first (build-fuzz/, clang with AddressSanitizer and
# UndefinedBehaviorSanitizer; scripts/setup.sh installs clang). Each target
# starts from its seed corpus in fuzz/corpus/<target> and keeps what it
# finds in build-fuzz/corpus/<target>, so later runs go on from there.
# Crashes, hangs (over 10 s per input), out-of-memory and leaks are written
# to build-fuzz/crashes/<target>/ (or $GPTQ_FUZZ_CRASH_DIR/<target>/); the
# script exits non-zero when any run found one. Each target's last status
# line (executions, exec/s, coverage) is printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(npy ir)
case "$seconds" in
  '' | *[!0-9]*) echo "fuzz: error: SECONDS must be a whole number, found '$seconds'" >&2; exit 1 ;;
esac

cxx=${GPTQ_FUZZ_CXX:-clang++-22}
cc=${GPTQ_FUZZ_CC:-clang-22}
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S . -B build-fuzz -G Ninja -DGPTQ_ENABLE_FUZZERS=ON \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null || exit 1
fi
cmake --build build-fuzz --target gptq-fuzzers || exit 1

crash_root=${GPTQ_FUZZ_CRASH_DIR:-$PWD/build-fuzz/crashes}
status=0
summary=()
for t in "${targets[@]}"; do
  bin=build-fuzz/bin/gptq-fuzz-$t
  if [ ! -x "$bin" ] || [ ! -d "fuzz/corpus/$t" ]; then
    echo "fuzz: error: no fuzz target '$t' (expected npy or ir)" >&2
    exit 1
  fi
  corpus=build-fuzz/corpus/$t
  crashes=$crash_root/$t
  mkdir -p "$corpus" "$crashes"
  log=build-fuzz/fuzz-$t.log
  extra=()
  [ -f "fuzz/$t.dict" ] && extra+=("-dict=fuzz/$t.dict")
  echo "fuzz: $t for $seconds s (log $log)" >&2
  # The first folder receives new inputs; the seeds are only read.
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "${extra[@]}" \
    "$corpus" "fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  found=$(find "$crashes" -type f | wc -l)
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "fuzz: $t: exit status $rc, $found input(s) in $crashes" >&2
    status=1
  fi
  summary+=("$t: $(grep -E '^#[0-9]+' "$log" | tail -n 1)")
  summary+=("$t: $(grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb' "$log" | tr -s ' ' | tr '\n' ' ')")
done
printf '%s\n' "${summary[@]}"
exit $status
