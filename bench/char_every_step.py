#!/usr/bin/env python3
"""The Character Transformer template (trained at every step) against
char_lstm, in DeepCanvas, on the same corpus (docs/BENCHMARKS.md, "Trained at
every step, in DeepCanvas"). Writes three projects into --out:

  lstm.dcproj      char_lstm
  tf_every.dcproj  the Character Transformer without its dropout layers
  tf_drop.dcproj   the Character Transformer as shipped: a prediction at
                   every step (TimeDistributedDense), Dropout(0.1) after each
                   attention and MLP

each with its Embedding and last layer sized to the corpus's vocabulary, then
(unless --write-only) trains them one after another with 700-step epochs and
prints validation loss against summed training seconds. Nothing else should
run meanwhile. The corpus is the template's own, Genesis
(sample_data/text/genesis.txt; sample_data/README.md says how it was made):

    /usr/bin/python3 bench/char_every_step.py
"""
import argparse
import json
import os
import re
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("--corpus", default="sample_data/text/genesis.txt")
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


def project(template, epochs, dropout=True):
    d = json.load(open(os.path.join(templates, template)))
    d["dataset"]["path"] = corpus
    d["training"]["epochs"] = epochs
    g = d["graph"]
    for n in g["nodes"]:
        if n["type"] == "Embedding":
            n["attrs"]["vocab_size"] = vocab
        if n["name"] == "fc":
            n["attrs"]["units"] = vocab
    if not dropout:
        # Splice each Dropout out: its consumers take its input.
        drops = {n["name"] for n in g["nodes"] if n["type"] == "Dropout"}
        src = {e["to"]: e["from"] for e in g["edges"] if e["to"] in drops}
        g["nodes"] = [n for n in g["nodes"] if n["name"] not in drops]
        g["edges"] = [dict(e, **{"from": src.get(e["from"], e["from"])}) for e in g["edges"]
                      if e["to"] not in drops]
    return d


runs = {
    "lstm": project("char_lstm.dcproj", 12),
    "tf_every": project("char_transformer.dcproj", 6, dropout=False),
    "tf_drop": project("char_transformer.dcproj", 6),
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
