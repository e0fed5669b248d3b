"""`envcheck plan` against published per-GPU peak memory (tests/plan_calibration.py), and the host RAM the model
gives a 13B checkpoint save, as Markdown for benchmarks/README.md.

    python benchmarks/bench_plan_calibration.py            # the calibration table and its median error
    python benchmarks/bench_plan_calibration.py --host     # the 13B save / resume host RAM by ZeRO stage
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from plan_calibration import POINTS, errors, median_abs_error  # noqa: E402

from envcheck.plan.gpu import gpu_memory  # noqa: E402
from envcheck.plan.host import host_memory  # noqa: E402
from envcheck.plan.setup import Setup  # noqa: E402
from envcheck.plan.source import resolve_model  # noqa: E402

GIB = 2**30


def calibration() -> None:
    rows = errors(lambda spec, setup: gpu_memory(spec, setup).total)
    print("| point | framework | measured GiB | predicted GiB | error |")
    print("| --- | --- | --- | --- | --- |")
    for point, predicted, error in rows:
        print(f"| {point.id} | {point.framework} | {point.measured / GIB:.1f} | {predicted / GIB:.1f} | {error:+.0%} |")
    print()
    frameworks = sorted({point.framework for point in POINTS})
    print(f"{len(rows)} points, {len(frameworks)} frameworks: median |error| {median_abs_error(rows):.1%}; "
          f"within 15 %: {sum(abs(e) <= 0.15 for *_, e in rows)}; under by more than 15 %: "
          f"{sum(e < -0.15 for *_, e in rows)}; over by more than 15 %: {sum(e > 0.15 for *_, e in rows)}")
    for name in frameworks:
        part = [row for row in rows if row[0].framework == name]
        print(f"- {name}: {len(part)} points, median |error| {median_abs_error(part):.1%}")


def host() -> None:
    model = resolve_model("meta-llama/Llama-2-13b-hf")
    weights = 2 * model.params  # the 16-bit parameter bytes
    print(f"Llama-2-13B ({model.params / 1e9:.2f}B parameters, 16-bit weights {weights / GIB:.1f} GiB), full "
          "fine-tune, one node; host RAM per node as a multiple of the 16-bit parameter bytes:")
    print()
    print("| GPUs | stage | save peak | x params | save without runtime RSS | x params | resume peak | x params |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for gpus in (1, 2, 4, 8):
        for zero in (2, 3):
            mem = host_memory(model, Setup(method="full", zero=zero, gpus_per_node=gpus))
            save, resume = mem.phase("save"), mem.phase("resume")
            rss = sum(p.bytes for p in mem.parts if p.phase == "save" and "runtime" in p.label)
            print(f"| {gpus} | ZeRO-{zero} | {save / GIB:.1f} GiB | {save / weights:.2f} | "
                  f"{(save - rss) / GIB:.1f} GiB | {(save - rss) / weights:.2f} | {resume / GIB:.1f} GiB | "
                  f"{resume / weights:.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", action="store_true", help="the 13B checkpoint-save host RAM table instead")
    args = parser.parse_args()
    host() if args.host else calibration()
    return 0


if __name__ == "__main__":
    sys.exit(main())
