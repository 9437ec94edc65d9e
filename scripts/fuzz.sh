#!/usr/bin/env bash
# Runs the fuzzers for a while, each target in turn:
#   scripts/fuzz.sh [SECONDS per target, default 600] [TARGET...]
# Targets (default: all): npy, npz, ir and capi, libFuzzer targets in C++ (fuzz/*.cpp,
# built in build-fuzz/ with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer; scripts/setup.sh installs clang), and llama2c,
# tokenizer, hf_config, safetensors and gptq_checkpoint, the Python package's
# readers, and generation, its sampler, generation and perplexity on a
# stand-in model, under atheris (fuzz/python/fuzz_TARGET.py; requirements.txt
# installs atheris).
#
# Each target starts from its seeds (fuzz/corpus/TARGET or
# fuzz/python/corpus/TARGET) and keeps what it finds in
# build-fuzz/corpus/TARGET, so later runs go on from there. Crashes, hangs
# (over 10 s per input), running out of memory and leaks are written to
# build-fuzz/crashes/TARGET/ (or $GPTQ_FUZZ_CRASH_DIR/TARGET/); the script
# exits non-zero when any run found one. Each target's last status line
# (executions, coverage) and final statistics are printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(npy npz ir capi llama2c tokenizer hf_config safetensors gptq_checkpoint generation)
case "$seconds" in
  '' | *[!0-9]*) echo "fuzz: error: SECONDS must be a whole number, found '$seconds'" >&2; exit 1 ;;
esac

built=0
crash_root=${GPTQ_FUZZ_CRASH_DIR:-$PWD/build-fuzz/crashes}
status=0
summary=()
for t in "${targets[@]}"; do
  extra=()
  case "$t" in
    npy | npz | ir | capi)
      if ((!built)); then
        if [ ! -f build-fuzz/build.ninja ]; then
          cmake -S . -B build-fuzz -G Ninja -DGPTQ_ENABLE_FUZZERS=ON \
            -DCMAKE_C_COMPILER="${GPTQ_FUZZ_CC:-clang-22}" \
            -DCMAKE_CXX_COMPILER="${GPTQ_FUZZ_CXX:-clang++-22}" >/dev/null || exit 1
        fi
        cmake --build build-fuzz --target gptq-fuzzers || exit 1
        built=1
      fi
      run=(build-fuzz/bin/gptq-fuzz-$t)
      seeds=fuzz/corpus/$t
      [ -f "fuzz/$t.dict" ] && extra+=("-dict=fuzz/$t.dict")
      ;;
    llama2c | tokenizer | hf_config | safetensors | gptq_checkpoint | generation)
      if ! .venv/bin/python -c "import atheris" 2>/dev/null; then
        echo "fuzz: error: atheris is not installed in .venv (run scripts/setup.sh)" >&2
        exit 1
      fi
      run=(.venv/bin/python fuzz/python/fuzz_$t.py)
      seeds=fuzz/python/corpus/$t
      ;;
    *)
      echo "fuzz: error: no fuzz target '$t' (expected npy, npz, ir, capi, llama2c, tokenizer, hf_config, safetensors, gptq_checkpoint or generation)" >&2
      exit 1
      ;;
  esac
  corpus=build-fuzz/corpus/$t
  crashes=$crash_root/$t
  log=build-fuzz/fuzz-$t.log
  mkdir -p "$corpus" "$crashes"
  echo "fuzz: $t for $seconds s (log $log)" >&2
  # The first folder receives new inputs; the seeds are only read.
  "${run[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "${extra[@]}" \
    "$corpus" "$seeds" >"$log" 2>&1
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
