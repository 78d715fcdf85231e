#!/usr/bin/env python3
"""The Character Transformer trained at every step against char_lstm, in
DeepCanvas, on a larger text (docs/BENCHMARKS.md, "Trained at every step, in
DeepCanvas"). Writes three projects built from the templates into --out:

  lstm.dcproj      char_lstm
  tf_every.dcproj  the Character Transformer with LastStep -> Dense replaced
                   by a TimeDistributedDense (a prediction at every step)
  tf_drop.dcproj   the same with Dropout(0.1) after each attention and MLP

each with its Embedding and last layer sized to the corpus's vocabulary, then
(unless --write-only) trains them one after another with 700-step epochs and
prints validation loss against summed training seconds. Nothing else should
run meanwhile. The corpus used in BENCHMARKS.md is Genesis from Debian's
bible-kjv package, one verse per line with the references stripped:

    bible -f gen1:1-gen50:26 | sed 's/^Ge[0-9]*:[0-9]* //' > genesis.txt
    /usr/bin/python3 bench/char_every_step.py --corpus genesis.txt
"""
import argparse
import json
import os
import re
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("--corpus", required=True)
ap.add_argument("--out", default="char_every_step")
ap.add_argument("--cli", default="build/bin/deepcanvas-cli")
ap.add_argument("--steps-per-epoch", type=int, default=700)
ap.add_argument("--write-only", action="store_true")
args = ap.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
templates = os.path.join(here, "..", "resources", "templates")
corpus = os.path.abspath(args.corpus)
vocab = len(set(open(corpus, encoding="utf-8").read())) + 1  # + padding
os.makedirs(args.out, exist_ok=True)


def project(template, epochs, every_step=False, dropout=0.0):
    d = json.load(open(os.path.join(templates, template)))
    d["dataset"]["path"] = corpus
    d["training"]["epochs"] = epochs
    g = d["graph"]
    g["nodes"] = [n for n in g["nodes"] if not (every_step and n["name"] == "last")]
    for n in g["nodes"]:
        if n["type"] == "Embedding":
            n["attrs"]["vocab_size"] = vocab
        if n["name"] == "fc":
            n["attrs"]["units"] = vocab
            if every_step:
                n["type"] = "TimeDistributedDense"
    if every_step:
        g["edges"] = [e for e in g["edges"] if "last" not in (e["from"], e["to"])]
        g["edges"].append({"from": "final_norm", "to": "fc", "port": 0})
    if dropout:
        nid = max(n["id"] for n in g["nodes"])
        for b in (1, 2):
            for src, dst in ((f"block{b}_attention", f"block{b}_add1"), (f"block{b}_mlp2", f"block{b}_add2")):
                nid += 1
                name = src + "_drop"
                g["nodes"].append({"id": nid, "type": "Dropout", "name": name, "attrs": {"rate": dropout},
                                   "pos": [0, 0]})
                for e in g["edges"]:
                    if e["from"] == src and e["to"] == dst:
                        e["from"] = name
                g["edges"].append({"from": src, "to": name, "port": 0})
    return d


runs = {
    "lstm": project("char_lstm.dcproj", 12),
    "tf_every": project("char_transformer.dcproj", 6, every_step=True),
    "tf_drop": project("char_transformer.dcproj", 6, every_step=True, dropout=0.1),
}
for name, d in runs.items():
    json.dump(d, open(os.path.join(args.out, name + ".dcproj"), "w"), indent=1)
if args.write_only:
    raise SystemExit(0)

line = re.compile(r"epoch (\d+)/\d+: train loss ([\d.]+) .*\| val loss ([\d.]+) .*\| test loss ([\d.]+) .*\| (\d+) samples/s")
for name in runs:
    err = subprocess.run([args.cli, "train", os.path.join(args.out, name + ".dcproj"), "--threads", "2",
                          "--steps-per-epoch", str(args.steps_per_epoch)],
                         capture_output=True, text=True).stderr
    print(name)
    t = 0.0
    for m in line.finditer(err):
        t += args.steps_per_epoch * 64 / float(m.group(5))
        print(f"  epoch {m.group(1):>2}  {t:6.1f} s  train {m.group(2)}  val {m.group(3)}  test {m.group(4)}  {m.group(5)}/s")
