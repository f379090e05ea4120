# SPDX-License-Identifier: GPL-3.0-or-later
# The benchmark table of scripts/device-check.sh, from its JSON lines: images/s, memory, and
# the ratio to PyTorch's best; a row of ours that did not run on CUDA is refused, not counted.
import json
import sys


def gib(b):
    return "%.2f GiB" % (b / 2**30) if b else ""


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("| side | precision | configuration | images/s | ms/step | input wait ms | memory "
          "| vs PyTorch's best |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    best = {}
    for r in rows:
        res = r["result"]
        if r["side"] == "pytorch" and "images_per_s" in res:
            best[r["precision"]] = max(best.get(r["precision"], 0), res["images_per_s"])
    verdict = []
    for r in rows:
        res = r["result"]
        where = (r["side"], r["precision"], r["config"])
        if "images_per_s" not in res:
            print("| %s | %s | %s | error: %s | | | | |" % (where + (res.get("error", "?"),)))
            continue
        # A figure that did not come from the GPU is no GPU figure.
        if r["side"] == "ours" and (res.get("backend") != "cuda" or res.get("fell_back")):
            print("| %s | %s | %s | REFUSED: ran on %s, not CUDA | | | | |"
                  % (where + (res.get("backend", "?"),)))
            continue
        b = best.get(r["precision"])
        ratio = "%.2fx" % (res["images_per_s"] / b) if b else "n/a"
        if r["side"] == "ours":
            mem = gib(res.get("plan_bytes_per_device", 0)) + " planned"
        else:
            mem = gib(res.get("max_memory_allocated_bytes", 0)) + " max allocated"
        wait = "%.2f" % res["median_input_wait_ms"] if "median_input_wait_ms" in res else ""
        print("| %s | %s | %s | %.0f | %.1f | %s | %s | %s |"
              % (where + (res["images_per_s"], res["median_ms_per_step"], wait, mem, ratio)))
        # The goal compares the device with the device: our resident-batch row.
        if r["side"] == "ours" and r["config"] == "captured, 5 streams" and b:
            verdict.append("%s: %.2fx PyTorch's best (goal 1.3x: %s)" % (
                r["precision"], res["images_per_s"] / b,
                "met" if res["images_per_s"] / b >= 1.3 else "missed"))
    print()
    for v in verdict:
        print("- " + v)


if __name__ == "__main__":
    main(sys.argv[1])
