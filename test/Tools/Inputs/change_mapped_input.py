"""Changes a tool's mapped input while the tool runs, and checks that the
run ends with one error naming the file, exit status 1 and no output.

  change_mapped_input.py MODE FILE OUTPUT -- COMMAND...

MODE is "truncate" (the file cut to nothing: its pages fault) or "rewrite"
(the same size, one byte changed in place, as `cp` over it leaves it). The
change is made as soon as the tool has the file mapped (it shows in
/proc/PID/maps); the file is put back afterwards. OUTPUT is the file or
folder the run would write: no file may appear there.
"""

import os
import subprocess
import sys
import time


def main() -> int:
    mode, path, output = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
    command = sys.argv[sys.argv.index("--") + 1:]
    original = open(path, "rb").read()
    proc = subprocess.Popen(command, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    mapped = False
    while not mapped and time.monotonic() < deadline and proc.poll() is None:
        try:
            mapped = path in open(f"/proc/{proc.pid}/maps").read()
        except OSError:
            break
    try:
        if mapped:
            if mode == "truncate":
                os.truncate(path, 0)
            else:
                with open(path, "r+b") as f:
                    f.seek(len(original) // 2)
                    byte = f.read(1)
                    f.seek(len(original) // 2)
                    f.write(bytes([byte[0] ^ 1]))
        _, err = proc.communicate(timeout=300)
    finally:
        with open(path, "wb") as f:
            f.write(original)
    err = err.decode(errors="replace").strip()
    lines = err.splitlines()
    errors = [line for line in lines if "error" in line]
    print(f"mapped: {mapped}; exit status {proc.returncode}; {len(errors)} error line(s)")
    print(lines[-1] if lines else "")
    written = os.path.isfile(output) or (os.path.isdir(output) and os.listdir(output))
    print("output written" if written else "no output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
