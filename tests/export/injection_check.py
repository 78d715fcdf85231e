#!/usr/bin/python3
"""Checks PyTorch exports made from projects whose strings carry payloads
(issue 29) against an export of the same project with harmless strings.

    injection_check.py CASES.json

CASES.json: {"baseline": CASE, "cases": [CASE, ...]}, a CASE being
{"dir": export folder, "name": project name, "layers": [layer names],
"data": dataset path, "target": CSV target column, "file": project file
name, optionally "cache": an image dataset's cache and loading strings}.
For every case: model.py and train.py parse (Python's ast) into the same
statements as the baseline's and read back the original strings;
both YAML manifests load (PyYAML) as one document each with the baseline's
keys and read back the project's image; the Dockerfile has the baseline's
instructions and lines; the README has the baseline's lines, and each shell
command line that differs passes `bash -n` and gives, word for word, the
baseline's words with the dataset path and project file in place, without
running anything (a marker file would show it). Prints the problems, one per
line; exits 1 when there are any."""
import ast
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

problems = []


def need(cond, what):
    if not cond:
        problems.append(what)


def read(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return f.read()


def shape(tree):
    """The statement and expression kinds of a module, in order: what a
    payload that adds code would change, whatever its names and strings."""
    return [type(n).__name__ for n in ast.walk(tree)]


def assigned(tree, name):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise KeyError(name)


def yaml_keys(v):
    if isinstance(v, dict):
        return {k: yaml_keys(x) for k, x in v.items()}
    if isinstance(v, list):
        return [yaml_keys(x) for x in v]
    return type(v).__name__


def shell_words(line, cwd):
    """The words bash makes of a command line, by running printf in its
    place: quoting mistakes show as other words, an injected command as a
    file in cwd. The line was checked with bash -n first."""
    r = subprocess.run(["bash", "-c", "printf '%s\\0' " + line.split(" ", 1)[1]],
                       cwd=cwd, capture_output=True)
    return [line.split(" ", 1)[0]] + r.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


def job_and_image(job_yaml):
    doc = yaml.safe_load(job_yaml)
    name = doc["metadata"]["name"]
    return name[:-len("-single")], doc["spec"]["template"]["spec"]["containers"][0]["image"]


def check(case, base, base_files):
    where = os.path.basename(case["dir"])
    files = {n: read(case["dir"], n) for n in base_files}
    # Python: the same statements, and the strings read back.
    for name in ("model.py", "train.py"):
        try:
            tree = ast.parse(files[name])
        except SyntaxError as e:
            need(False, f"{where}/{name}: does not parse: {e}")
            continue
        need(shape(tree) == shape(ast.parse(base_files[name])),
             f"{where}/{name}: its statements differ from the template's")
        need(files[name].count("\n") == base_files[name].count("\n"),
             f"{where}/{name}: {files[name].count(chr(10))} lines, the template makes "
             f"{base_files[name].count(chr(10))}")
        doc = ast.get_docstring(tree) or ""
        first = {"model.py": case["name"] + " as a PyTorch module",
                 "train.py": "Trains " + case["name"] + " as DeepCanvas would"}[name]
        need(doc.startswith(first), f"{where}/{name}: docstring does not start {first!r}: {doc[:80]!r}")
        if name == "model.py":
            renamed = assigned(tree, "RENAMED")
            need(sorted(renamed.values()) == sorted(case["layers"]),
                 f"{where}/model.py: RENAMED holds {sorted(renamed.values())!r}")
            need(all(k.isidentifier() for k in renamed), f"{where}/model.py: an attribute is not an identifier")
        else:
            config = assigned(tree, "CONFIG")
            need(config["name"] == case["name"], f"{where}/train.py: CONFIG name {config['name']!r}")
            need(config["dataset"]["path"] == case["data"], f"{where}/train.py: CONFIG dataset path")
            need(config["dataset"]["target"] == case["target"], f"{where}/train.py: CONFIG dataset target")
            if "cache" in case:  # an image dataset's fields (issue 31)
                need(config["dataset"]["cache"] == case["cache"], f"{where}/train.py: CONFIG dataset cache")
                need(config["dataset"]["loading"] == case["cache"], f"{where}/train.py: CONFIG dataset loading")
    # YAML: one document each, the template's keys, the image read back.
    for name in ("k8s/pytorchjob.yaml", "k8s/job.yaml"):
        try:
            docs = list(yaml.safe_load_all(files[name]))
        except yaml.YAMLError as e:
            need(False, f"{where}/{name}: does not load: {e}")
            continue
        base_doc = yaml.safe_load(base_files[name])
        need(len(docs) == 1, f"{where}/{name}: {len(docs)} YAML documents")
        need(yaml_keys(docs[0]) == yaml_keys(base_doc), f"{where}/{name}: keys differ from the template's")
        need(files[name].count("\n") == base_files[name].count("\n"), f"{where}/{name}: line count differs")
    # Dockerfile: the same instructions; comments stay comments and none is
    # a parser directive (# syntax=..., # escape=...).
    lines, base_lines = files["Dockerfile"].split("\n"), base_files["Dockerfile"].split("\n")
    need(len(lines) == len(base_lines), f"{where}/Dockerfile: {len(lines)} lines, the template makes {len(base_lines)}")
    for a, b in zip(lines, base_lines):
        if b.startswith("#"):
            need(a.startswith("#"), f"{where}/Dockerfile: a comment line became {a!r}")
        else:
            need(a == b, f"{where}/Dockerfile: instruction {a!r} instead of {b!r}")
    need(not re.match(r"#\s*[A-Za-z][A-Za-z0-9]*\s*=", lines[0]), f"{where}/Dockerfile: first line is a parser directive")
    # README: the same lines; shell lines that differ hold the same words.
    lines, base_lines = files["README.md"].split("\n"), base_files["README.md"].split("\n")
    need(len(lines) == len(base_lines), f"{where}/README.md: {len(lines)} lines, the template makes {len(base_lines)}")
    job, image = job_and_image(files["k8s/job.yaml"])
    base_job, base_image = job_and_image(base_files["k8s/job.yaml"])
    with tempfile.TemporaryDirectory() as cwd:
        for a, b in zip(lines, base_lines):
            if a == b or not re.match(r"(python3|torchrun|docker|deepcanvas-cli|kubectl) ", b):
                continue
            syntax = subprocess.run(["bash", "-n", "-c", a], capture_output=True, text=True)
            need(syntax.returncode == 0, f"{where}/README.md: bash -n refuses {a!r}: {syntax.stderr}")
            got, want = shell_words(a, cwd), shell_words(b, cwd)
            swap = {base["data"]: case["data"], base["file"]: case["file"]}
            want = [swap.get(w, w) for w in want]
            # The job and image names are made from the project name (a
            # DNS-1123 label, checked): the same words with the other name.
            for old, new in ((base_job, job), (base_image, image)):
                want = [w.replace(old, new) for w in want]
            need(got == want, f"{where}/README.md: {a!r} gives the words {got!r}, not {want!r}")
        need(os.listdir(cwd) == [], f"{where}/README.md: a command line ran something: {os.listdir(cwd)}")


spec = json.load(open(sys.argv[1], encoding="utf-8"))
base = spec["baseline"]
base_files = {n: read(base["dir"], n) for n in
              ("model.py", "train.py", "k8s/pytorchjob.yaml", "k8s/job.yaml", "Dockerfile", "README.md")}
for case in spec["cases"]:
    check(case, base, base_files)
print("\n".join(problems))
sys.exit(1 if problems else 0)
