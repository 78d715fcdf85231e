#!/usr/bin/python3
"""Issue 31's input-pipeline figures, DeepCanvas against PyTorch in one run.

1. Pipeline: decode + RandomResizedCrop(SIZE) + flip + normalise of a photo
   folder, batches consumed and thrown away, 2 workers each side:
   build/bin/image_pipeline_bench (no cache, streamed) against
   bench/image_pipeline_torch.py (torchvision ImageFolder + DataLoader,
   num_workers=2). Each side in its own process, alternating, --repeats times.
2. Cache: image_pipeline_bench with a fresh cache folder for 2 epochs: the
   second epoch's images/s against the first's.
3. Memory: `deepcanvas-cli train bench/image_cnn64.dcproj --data FOLDER`
   (streamed, 1 epoch) on the large and on the small folder; peak resident
   set of the whole process (wait4's ru_maxrss).

Prints a JSON summary (median [min..max] of each figure) and writes it to
bench/results/. Nothing else may run on the machine meanwhile.

    /usr/bin/python3 bench/image_pipeline_vs_torch.py --folder /tmp/imgbench/f5k \
        --big /tmp/imgbench/f20k --small /tmp/imgbench/f2k --repeats 3
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, env=None):
    """Runs cmd, returns (its JSON stdout lines, stderr)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err[-3000:]}")
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return lines, err


def rss_run(cmd):
    """Runs cmd and returns (seconds, ru_maxrss of that child in MB, stderr tail)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err[-3000:]}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, err


def summary(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": v}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", required=True, help="pipeline and cache folder")
    ap.add_argument("--big", help="memory: the large folder")
    ap.add_argument("--small", help="memory: the small folder")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    bench = os.path.join(a.build, "bin", "image_pipeline_bench")
    cli = os.path.join(a.build, "bin", "deepcanvas-cli")
    common = ["--size", str(a.size), "--workers", str(a.workers)]
    res = {"cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": "),
           "cores": os.cpu_count(), "size": a.size, "workers": a.workers, "folder": a.folder}

    dc, pt = [], []
    for r in range(a.repeats):
        order = ["dc", "pt"] if r % 2 == 0 else ["pt", "dc"]
        for side in order:
            if side == "dc":
                lines, _ = run([bench, a.folder, *common, "--cache", "none", "--epochs", "1"])
                dc.append(lines[0]["images_per_s"])
            else:
                lines, _ = run(["/usr/bin/python3", os.path.join(ROOT, "bench", "image_pipeline_torch.py"),
                                a.folder, *common, "--epochs", "1"])
                pt.append(lines[0]["images_per_s"])
    res["pipeline_images_per_s"] = {"deepcanvas": summary(dc), "pytorch": summary(pt),
                                    "ratio": statistics.median(dc) / statistics.median(pt)}

    first, second = [], []
    for r in range(a.repeats):
        cache = tempfile.mkdtemp(prefix="dc-cache-")
        try:
            lines, _ = run([bench, a.folder, *common, "--cache", cache, "--epochs", "2"])
            first.append(lines[0]["images_per_s"])
            second.append(lines[1]["images_per_s"])
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    res["cache"] = {"first_epoch": summary(first), "second_epoch": summary(second),
                    "ratio": statistics.median(second) / statistics.median(first)}

    if a.big and a.small:
        project = os.path.join(ROOT, "bench", "image_cnn64.dcproj")
        mem = {"big": [], "small": []}
        for r in range(a.repeats):
            for key, folder in (("big", a.big), ("small", a.small)) if r % 2 == 0 else (("small", a.small), ("big", a.big)):
                secs, rss, _ = rss_run([cli, "train", project, "--data", folder, "--epochs", "1"])
                mem[key].append(rss)
        res["train_peak_rss_mb"] = {"big": summary(mem["big"]), "small": summary(mem["small"]),
                                    "difference": statistics.median(mem["big"]) - statistics.median(mem["small"])}

    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    name = time.strftime("image-pipeline-%Y%m%d-%H%M.json")
    with open(os.path.join(ROOT, "bench", "results", name), "w") as f:
        json.dump(res, f, indent=2)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
