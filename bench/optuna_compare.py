#!/usr/bin/env python3
"""Optuna as the reference for `deepcanvas-cli sweep` (issue 15).

Runs the same search space on the same project twice:
  - Optuna: TPESampler(seed) + SuccessiveHalvingPruner(min_resource=1,
    reduction_factor=ETA), each trial one `deepcanvas-cli train` process whose
    per-epoch lines (validation and test accuracy) are reported to Optuna;
    a pruned trial's process is stopped at that epoch boundary;
  - DeepCanvas: `deepcanvas-cli sweep` with TPE + ASHA, the same trials,
    epochs, eta and seed.
Both train every trial with the project's own training seed and 10 % of the
training set held out for validation, and rank trials by the last epoch's
validation accuracy. Prints best-found accuracy against trials and epochs
used, as a Markdown table (docs/BENCHMARKS.md).

Needs optuna: bench/optuna_compare.sh makes a virtual environment
(.venv-bench) and installs it from PyPI; run that, not this file directly,
unless optuna is already importable.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

EPOCH_LINE = re.compile(
    r"^epoch (\d+)/(\d+): train loss (\S+).*?\| val loss \S+ acc ([\d.]+)%"
    r"(?:.*?\| test loss \S+ acc ([\d.]+)%)?")


def parse_space(specs):
    """NAME=KIND:ARGS as the CLI takes them."""
    space = []
    for s in specs:
        name, rest = s.split("=", 1)
        kind, args = rest.split(":", 1)
        if kind == "choice":
            space.append((name, kind, args.split(",")))
        else:
            lo, hi = args.split(":")
            space.append((name, kind, (float(lo), float(hi))))
    return space


def suggest(trial, space):
    values = {}
    for name, kind, args in space:
        if kind == "log":
            values[name] = trial.suggest_float(name, args[0], args[1], log=True)
        elif kind == "float":
            values[name] = trial.suggest_float(name, args[0], args[1])
        elif kind == "int":
            values[name] = trial.suggest_int(name, int(args[0]), int(args[1]))
        else:
            values[name] = trial.suggest_categorical(name, args)
    return values


def trial_project(base, values, path):
    """The project with the layer attributes (NODE.ATTR) of `values` written
    in; training settings go to the command line instead."""
    p = json.loads(json.dumps(base))
    flags = []
    for name, v in values.items():
        if "." in name and not name.startswith(("optimizer.", "schedule.")):
            node, attr = name.split(".", 1)
            for n in p["graph"]["nodes"]:
                if n["name"] == node:
                    n["attrs"][attr] = int(v) if isinstance(v, int) else v
                    break
            else:
                sys.exit(f"no layer named {node} in the project")
        else:
            flags += [f"--{name}", str(v)]  # a setting by its CLI flag (lr, batch)
    with open(path, "w") as f:
        json.dump(p, f)
    return flags


def run_optuna(args, base, space, workdir, baseline=None):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=args.seed)
    pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=args.eta)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    if baseline:
        # The same first trial as the DeepCanvas sweep's: the project's own
        # values (choices as the strings suggest_categorical returns).
        study.enqueue_trial({name: (str(baseline[name]) if kind == "choice" else baseline[name])
                             for name, kind, _ in space})
    log = []

    def objective(trial):
        values = suggest(trial, space)
        proj = os.path.join(workdir, f"optuna_{trial.number}.dcproj")
        flags = trial_project(base, values, proj)
        cmd = [args.cli, "train", proj, "--epochs", str(args.epochs), "--val-split", "0.1",
               "--threads", str(args.threads)] + flags
        if args.steps_per_epoch:
            cmd += ["--steps-per-epoch", str(args.steps_per_epoch)]
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        epochs, last_val, last_test, status = 0, None, None, "completed"
        for line in proc.stderr:
            m = EPOCH_LINE.match(line.strip())
            if not m:
                continue
            epochs = int(m.group(1))
            loss = float(m.group(3))
            last_val = float(m.group(4)) / 100
            last_test = float(m.group(5)) / 100 if m.group(5) else None
            if loss != loss or loss in (float("inf"), float("-inf")):
                status = "failed"
                proc.kill()
                break
            trial.report(last_val, epochs)
            if epochs < args.epochs and trial.should_prune():
                status = "pruned"
                proc.kill()
                break
        proc.wait()
        if status == "completed" and (proc.returncode != 0 or epochs < args.epochs):
            status = "failed"
        log.append({"id": trial.number, "params": values, "status": status, "epochs": epochs,
                    "val_accuracy": last_val, "test_accuracy": last_test})
        if status == "pruned":
            raise optuna.TrialPruned()
        if status == "failed":
            return float("nan")  # Optuna records a NaN objective as a failed trial
        return last_val

    study.optimize(objective, n_trials=args.trials)
    return log


def run_deepcanvas(args, project, specs):
    cmd = [args.cli, "sweep", project, "--fresh", "--trials", str(args.trials), "--epochs",
           str(args.epochs), "--sampler", "tpe", "--pruner", "asha", "--eta", str(args.eta),
           "--seed", str(args.seed), "--threads", str(args.threads), "--min-epochs",
           str(args.min_epochs), "--json"]
    if args.no_baseline:
        cmd.append("--no-baseline")
    if args.steps_per_epoch:
        cmd += ["--steps-per-epoch", str(args.steps_per_epoch)]
    for s in specs:
        cmd += ["--param", s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    s = json.loads(out)
    log = []
    for t in s["trials"]:
        m = t["metrics"][-1] if t["metrics"] else {}
        # Epochs trained (a fraction for a trial stopped at a rung inside an
        # epoch), not the number of measurements.
        log.append({"id": t["id"], "params": t["params"], "status": t["status"],
                    "epochs": m.get("trained", len(t["metrics"])),
                    "val_accuracy": m.get("val_accuracy"),
                    "test_accuracy": m.get("test_accuracy"),
                    "baseline": t.get("baseline", False)})
    return log


def best_after(log, n):
    """The completed trial with the best last validation accuracy among the first n."""
    done = [t for t in log[:n] if t["status"] == "completed" and t["val_accuracy"] is not None]
    return max(done, key=lambda t: t["val_accuracy"]) if done else None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.path.join(root, "build/bin/deepcanvas-cli"))
    ap.add_argument("--project", default=os.path.join(root, "sample_data/sample_project.dcproj"))
    ap.add_argument("--trials", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--eta", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps-per-epoch", type=int, default=0)
    ap.add_argument("--min-epochs", default="1",
                    help="the DeepCanvas sweep's first ASHA rung (default 1, Optuna's "
                         "min_resource; the sweep's own default is epochs/eta^2)")
    ap.add_argument("--no-baseline", action="store_true",
                    help="no trial 0 with the project's own values, in either sweep")
    ap.add_argument("--param", action="append",
                    help="as for deepcanvas-cli sweep (default: the BENCHMARKS.md space)")
    ap.add_argument("--raw", help="write both trial logs as JSON here")
    args = ap.parse_args()
    specs = args.param or ["lr=log:3e-4:1e-2", "batch=choice:32,64,128",
                           "conv1.filters=int:16:64"]
    space = parse_space(specs)

    with open(args.project) as f:
        base = json.load(f)
    # The copies live elsewhere: the dataset path becomes absolute.
    ds = base.get("dataset", {})
    if ds.get("path") and not os.path.isabs(ds["path"]):
        ds["path"] = os.path.join(os.path.dirname(os.path.abspath(args.project)), ds["path"])
    with tempfile.TemporaryDirectory() as work:
        project = os.path.join(work, "sweep.dcproj")
        with open(project, "w") as f:
            json.dump(base, f)
        print(f"DeepCanvas sweep: {args.trials} trials x {args.epochs} epochs ...", file=sys.stderr)
        dc = run_deepcanvas(args, project, specs)
        print("Optuna (TPESampler + SuccessiveHalvingPruner) ...", file=sys.stderr)
        base_trial = next((t for t in dc if t.get("baseline")), None)
        op = run_optuna(args, base, space, work, base_trial["params"] if base_trial else None)
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump({"deepcanvas": dc, "optuna": op}, f, indent=1)

    def pct(x):
        return "–" if x is None else f"{100 * x:.2f} %"

    print(f"| sweep | trials | epochs trained | completed / pruned / failed | best trial "
          f"(val / test accuracy) |")
    print("|---|---|---|---|---|")
    for name, log in (("deepcanvas-cli sweep (TPE + ASHA)", dc),
                      ("Optuna TPESampler + SuccessiveHalvingPruner", op)):
        checkpoints = sorted({max(1, args.trials // 2), args.trials})
        for n in checkpoints:
            part = log[:n]
            st = [t["status"] for t in part]
            b = best_after(log, n)
            best = (f"trial {b['id']}: {pct(b['val_accuracy'])} / {pct(b['test_accuracy'])}"
                    if b else "–")
            print(f"| {name} | {n} | {sum(t['epochs'] for t in part):.4g} | "
                  f"{st.count('completed')} / {st.count('pruned')} / {st.count('failed')} | "
                  f"{best} |")


if __name__ == "__main__":
    main()
