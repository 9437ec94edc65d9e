"""Interrupts gptq-run while it puts many results in place, and checks that
the result folder holds one run's whole set (the old or the new, never a
mixture) and no temporary file.

  interrupt_results.py GPTQ_RUN WORK_DIR SIGNAL TRIALS

Each trial writes a set of results from one input, then runs again with
another input and sends SIGNAL: in even trials as soon as the first result
of the new set is in place (its inode changes), while the others are still
being renamed; in odd ones as soon as a temporary file of the new set
appears, while they are being written. With SIGNAL "ignored-SIGINT" the
runs start with SIGINT ignored and must not heed it.
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np

RESULTS = 400


def module_text() -> str:
    lines = ["func.func @main(%a: tensor<64xf32>) -> ("
             + ", ".join(["tensor<64xf32>"] * RESULTS) + ") {"]
    names = []
    for i in range(RESULTS):
        lines.append(f"  %c{i} = arith.constant dense<{float(i)}> : tensor<64xf32>")
        lines.append(f"  %r{i} = arith.addf %a, %c{i} : tensor<64xf32>")
        names.append(f"%r{i}")
    lines.append("  return " + ", ".join(names) + " : " + ", ".join(["tensor<64xf32>"] * RESULTS))
    lines.append("}")
    return "\n".join(lines) + "\n"


def run(tool, module, inp, out, env, ignored=None):
    # With the default actions, whatever the test runner ignores; `ignored`
    # is started ignored, as a shell's background job starts with SIGINT.
    def dispositions():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if ignored is not None:
            signal.signal(ignored, signal.SIG_IGN)

    return subprocess.Popen([tool, module, "--input", inp, "--output-dir", out],
                            env=env, stderr=subprocess.DEVNULL, preexec_fn=dispositions)


def main() -> int:
    tool, work, signame, trials = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    # "ignored-SIGINT": the signal is ignored from the start, and must stay
    # so: every run ends normally with the whole new set.
    ignored = signame.startswith("ignored-")
    signame = signame[len("ignored-"):] if ignored else signame
    sig = getattr(signal, signame)
    os.makedirs(work, exist_ok=True)
    module = os.path.join(work, "many.mlir")
    with open(module, "w") as f:
        f.write(module_text())
    env = dict(os.environ)
    for value in (1.0, 1000.0):
        np.save(os.path.join(work, f"in{int(value)}.npy"), np.full(64, value, np.float32))
    old_in, new_in = os.path.join(work, "in1.npy"), os.path.join(work, "in1000.npy")
    # Compiled once, so that the trials' runs spend their time writing.
    out = os.path.join(work, "warm")
    assert run(tool, module, old_in, out, env).wait() == 0
    interrupted = 0
    for trial in range(trials):
        out = os.path.join(work, f"out{trial}")
        assert run(tool, module, old_in, out, env).wait() == 0
        first = os.stat(os.path.join(out, "0.npy")).st_ino
        proc = run(tool, module, new_in, out, env, sig if ignored else None)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if trial % 2 and any(".tmp" in n for n in os.listdir(out)):
                break
            try:
                if not trial % 2 and os.stat(os.path.join(out, "0.npy")).st_ino != first:
                    break
            except FileNotFoundError:
                pass
        proc.send_signal(sig)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            print(f"trial {trial}: gptq-run did not end within 60 s of {signame}")
            return 1
        if proc.returncode == -sig:
            interrupted += 1
        starts = {float(np.load(os.path.join(out, f"{i}.npy"))[0]) - i for i in range(RESULTS)}
        if ignored and (proc.returncode != 0 or starts != {1000.0}):
            print(f"trial {trial}: {signame}, ignored, ended the run ({proc.returncode}) or "
                  f"left an old set {sorted(starts)}")
            return 1
        left = [n for n in os.listdir(out) if "tmp" in n]
        if len(starts) != 1 or left:
            print(f"trial {trial}: a mixture of sets {sorted(starts)} or temporaries {left[:3]}")
            return 1
    print(f"{trials} trials: each folder holds one whole set, no temporary file "
          f"({interrupted} runs ended by {signame})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
