"""The shared procedure of the CPU benchmarks against PyTorch
(bench/cnn_vs_pytorch.py, bench/lstm_vs_pytorch.py): each side in its own
process, alternating which goes first, --repeats runs per side, median and
spread (min..max) of samples/s, and the raw JSON of every run written to
bench/results/ with the commit, CPU model and PyTorch's build configuration,
so that a figure in docs/BENCHMARKS.md can be traced to its run."""
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd, env=None):
    """Runs one side; returns its last stdout line as JSON, plus wall_s."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err}\n{out}")
    j = json.loads(out.strip().splitlines()[-1])
    j["wall_s"] = time.time() - t0
    return j


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line.split(":", 1)[1].split()
                    return [x for x in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")
                            if x in flags]
    except OSError:
        pass
    return []


def commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def compare(name, sides, repeats, describe, metric="train_samples_per_s"):
    """sides: list of (label, argv, env or None); the first is DeepCanvas,
    the last the PyTorch peer. Runs every side `repeats` times, the order
    rotating each round so no side always runs first (or right after the
    same neighbour), prints a table and one JSON object, and saves the JSON
    under bench/results/. `metric`: the samples/s key of each run's JSON, or
    a function of the run's JSON that returns it."""
    value = metric if callable(metric) else (lambda res: res[metric])
    runs = {label: [] for label, _, _ in sides}
    for r in range(repeats):
        order = sides if r % 2 == 0 else list(reversed(sides))
        for label, argv, env in order:
            res = run(argv, env)
            runs[label].append(res)
            res["measured_samples_per_s"] = value(res)
            print(f"  round {r + 1}: {label:14} {res['measured_samples_per_s']:9.1f} samples/s",
                  flush=True)
    summary = {}
    for label, rs in runs.items():
        sps = [x["measured_samples_per_s"] for x in rs]
        summary[label] = {
            "median_samples_per_s": statistics.median(sps),
            "min_samples_per_s": min(sps),
            "max_samples_per_s": max(sps),
            "test_accuracy": [x.get("test_accuracy", float("nan")) for x in rs],
            "peak_rss_mb": statistics.median(x.get("peak_rss_mb", 0) for x in rs),
        }
    ours, peer = sides[0][0], sides[-1][0]
    ratio = summary[ours]["median_samples_per_s"] / summary[peer]["median_samples_per_s"]
    print(f"machine: {cpu_model()} ({', '.join(cpu_flags())}), {os.cpu_count()} CPUs; "
          f"{describe}; {repeats} runs per side, alternating")
    print(f"{'':16} {'median':>9} {'min..max samples/s':>20} {'test acc':>9} {'peak RSS':>9}")
    for label, s in summary.items():
        acc = statistics.median(s["test_accuracy"])
        acc_s = f"{100 * acc:8.2f}%" if acc == acc else f"{'-':>9}"  # NaN: no accuracy
        print(f"{label:16} {s['median_samples_per_s']:9.1f} "
              f"{s['min_samples_per_s']:9.1f}..{s['max_samples_per_s']:<9.1f} "
              f"{acc_s} {s['peak_rss_mb']:6.0f} MB")
    print(f"ratio of medians ({ours} / {peer}): {ratio:.2f}x")
    torch_config = runs[peer][0].get("torch_config", "")
    result = {
        "benchmark": name, "commit": commit(),
        "utc": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu_model(), "cpu_flags": cpu_flags(), "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(), "describe": describe, "repeats": repeats,
        "summary": summary, "ratio_of_medians": ratio, "runs": runs,
        "torch_config": torch_config,
    }
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    stamp = datetime.datetime.utcnow().strftime("%Y%m%d-%H%M")
    path = os.path.join(HERE, "results", f"cpu-{name}-{stamp}-{result['commit']}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"raw results: {os.path.relpath(path, ROOT)}")
    print(json.dumps({"ratio": ratio, "summary": summary}))
    return result
