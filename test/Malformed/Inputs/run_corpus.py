"""Runs gptq-opt over malformed inputs and checks that it fails cleanly.

  run_corpus.py corpus DIR       every DIR/*.mlir must exit with status 1
  run_corpus.py mutate FILE N    N seeded mutants of FILE must exit with 0 or
                                 1, and so must the CPU pipeline on those
                                 that parse

A clean failure is exit status 1 with an "error:" diagnostic; a crash (a
signal, LLVM's stack dump, or any other status) fails the test.
"""

import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

GPTQ_OPT = shutil.which("gptq-opt")


def run(path, extra):
    proc = subprocess.run([GPTQ_OPT, path, "-o", os.devnull] + extra,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=60)
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


def crashed(status, stderr):
    return (status not in (0, 1) or "Stack dump" in stderr
            or "PLEASE submit a bug report" in stderr)


def check_corpus(directory):
    failures = 0
    count = 0
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".mlir"):
            continue
        path = os.path.join(directory, name)
        with open(path, encoding="utf-8") as f:
            first = f.readline()
        # The options of the first RUN line, e.g. the lowering pipeline.
        match = re.search(r"%s(.*?)2>&1", first)
        extra = shlex.split(match.group(1)) if match else []
        status, stderr = run(path, extra)
        count += 1
        if status != 1 or "error:" not in stderr or crashed(status, stderr):
            failures += 1
            print(f"FAIL {name}: exit status {status}\n{stderr}")
    print(f"checked {count} files, {failures} failures")
    return failures == 0


def mutate(text, rng):
    data = bytearray(text)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(4)
        at = rng.randrange(len(data))
        if kind == 0:  # replace a byte
            data[at] = rng.randrange(256)
        elif kind == 1:  # delete a run
            del data[at:at + rng.randint(1, 16)]
        elif kind == 2:  # duplicate a run
            data[at:at] = data[at:at + rng.randint(1, 32)]
        else:  # truncate
            del data[at:]
        if not data:
            data = bytearray(b"}")
    return bytes(data)


def check_mutants(path, count):
    with open(path, "rb") as f:
        text = f.read()
    rng = random.Random(20240521)
    failures = 0
    statuses = {0: 0, 1: 0}
    with tempfile.TemporaryDirectory() as tmp:
        mutant = os.path.join(tmp, "mutant.mlir")
        for i in range(count):
            data = mutate(text, rng)
            with open(mutant, "wb") as f:
                f.write(data)
            status, stderr = run(mutant, [])
            if crashed(status, stderr) or (status == 1 and "error:" not in stderr):
                failures += 1
                print(f"FAIL mutant {i}: exit status {status}\n"
                      f"input: {data[:1000]!r}\n{stderr[:2000]}")
                continue
            statuses[status] += 1
            if status == 0:
                # What parses must also lower, or fail with a diagnostic.
                status, stderr = run(mutant, ["--gptq-lower-to-cpu-pipeline"])
                if crashed(status, stderr) or (status == 1 and
                                               "error:" not in stderr):
                    failures += 1
                    print(f"FAIL mutant {i} in the CPU pipeline: exit status "
                          f"{status}\ninput: {data[:1000]!r}\n{stderr[:2000]}")
    print(f"checked {count} mutants: {statuses[1]} rejected, "
          f"{statuses[0]} accepted, {failures} failures")
    return failures == 0


def main():
    if GPTQ_OPT is None:
        print("gptq-opt is not on PATH")
        return 1
    if sys.argv[1] == "corpus":
        return 0 if check_corpus(sys.argv[2]) else 1
    if sys.argv[1] == "mutate":
        return 0 if check_mutants(sys.argv[2], int(sys.argv[3])) else 1
    print(__doc__)
    return 1


if __name__ == "__main__":
    sys.exit(main())
