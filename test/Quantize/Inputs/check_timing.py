"""Checks the "timing" object of gptq-quantize-model reports (see the .test)."""

import json
import sys

reports = {}
for label, path in zip(("gptq", "rtn"), sys.argv[1:]):
    with open(path) as handle:
        report = json.load(handle)
    timing = report["timing"]
    reports[label] = timing
    print(f"{label}: {' '.join(sorted(timing))}")
    problems = [k for k, v in timing.items() if not isinstance(v, (int, float)) or not v >= 0]
    forwards = timing["calibration_forward_seconds"] + timing["propagation_forward_seconds"]
    if abs(forwards - report["seconds"]["calibration"]) > 1e-6:
        problems.append(f"forwards {forwards} != calibration {report['seconds']['calibration']}")
    if timing["quantize_layer_seconds"] > timing["quantize_seconds"] + 1e-9:
        problems.append("quantize_layer_seconds > quantize_seconds")
    parts = forwards + timing["quantize_seconds"] + timing["rewrite_seconds"] + timing["compile_seconds"]
    if parts > timing["total_seconds"] + 1e-6:
        problems.append(f"phases {parts} > total {timing['total_seconds']}")
    for key in ("compile", "quantize", "total"):
        if timing[f"{key}_seconds"] != report["seconds"][key]:
            problems.append(f"{key}_seconds differs from seconds.{key}")
    stages = report["stages"]
    for key in ("calibration", "propagation"):
        total = sum(stage[f"{'hessian' if key == 'calibration' else key}_forward_seconds"] for stage in stages)
        if abs(total - timing[f"{key}_forward_seconds"]) > 1e-6:
            problems.append(f"stages' {key} forwards {total} != {timing[f'{key}_forward_seconds']}")
    staged = sorted(name for stage in stages for name in stage["layers"])
    calibrated = sorted(layer["name"] for layer in report["layers"] if layer.get("stage") is not None)
    if label == "gptq" and staged != calibrated:
        problems.append(f"stages' layers {staged} != the calibrated layers {calibrated}")
    print(f"{label}: {'ok' if not problems else '; '.join(problems)}")
    print(f"{label}: {len(stages)} stages")
gptq = reports["gptq"]
print("gptq forwards:", gptq["calibration_forward_seconds"] > 0, gptq["propagation_forward_seconds"] > 0)
rtn = reports["rtn"]
print("rtn forwards:", rtn["calibration_forward_seconds"], rtn["propagation_forward_seconds"])
