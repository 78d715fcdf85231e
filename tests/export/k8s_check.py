#!/usr/bin/python3
"""Checks an export's Kubernetes manifests against what Kubeflow's PyTorchJob
(kubeflow.org/v1) and a batch/v1 Job require; prints the problems, one per
line, and exits 1 when there are any. Needs PyYAML (python3-yaml)."""
import sys

import yaml

problems = []


def need(cond, what):
    if not cond:
        problems.append(what)


def check_pod(spec, where):
    need(isinstance(spec, dict), f"{where}: template.spec missing")
    cs = (spec or {}).get("containers") or []
    need(len(cs) >= 1, f"{where}: no containers")
    for c in cs:
        need(bool(c.get("image")), f"{where}: container {c.get('name')} has no image")
    return cs


folder = sys.argv[1]
with open(folder + "/k8s/pytorchjob.yaml") as f:
    job = yaml.safe_load(f)
need(job.get("apiVersion") == "kubeflow.org/v1", "pytorchjob: apiVersion is not kubeflow.org/v1")
need(job.get("kind") == "PyTorchJob", "pytorchjob: kind is not PyTorchJob")
need(bool((job.get("metadata") or {}).get("name")), "pytorchjob: metadata.name missing")
specs = (job.get("spec") or {}).get("pytorchReplicaSpecs") or {}
need("Master" in specs and "Worker" in specs, "pytorchjob: spec.pytorchReplicaSpecs needs Master and Worker")
for role, rs in specs.items():
    need(role in ("Master", "Worker"), f"pytorchjob: unknown replica type {role}")
    need(isinstance(rs.get("replicas"), int) and rs["replicas"] >= 1, f"{role}: replicas must be a positive integer")
    need(rs.get("restartPolicy") in ("Always", "OnFailure", "Never", "ExitCode"), f"{role}: bad restartPolicy")
    cs = check_pod((rs.get("template") or {}).get("spec"), role)
    # The training operator finds the container it configures by this name.
    need(any(c.get("name") == "pytorch" for c in cs), f"{role}: no container named pytorch")
need(specs.get("Master", {}).get("replicas") == 1, "Master: replicas must be 1")

with open(folder + "/k8s/job.yaml") as f:
    plain = yaml.safe_load(f)
need(plain.get("apiVersion") == "batch/v1" and plain.get("kind") == "Job", "job.yaml: not a batch/v1 Job")
tpl = (plain.get("spec") or {}).get("template") or {}
need(tpl.get("spec", {}).get("restartPolicy") in ("OnFailure", "Never"), "job.yaml: restartPolicy must be OnFailure or Never")
check_pod(tpl.get("spec"), "job.yaml")
print("\n".join(problems))
sys.exit(1 if problems else 0)
