"""TensorBoard's HParams data for a DeepCanvas sweep (issue 35).

Usage: tensorboard_sweep_check.py LOG_DIR STATE_JSON. Loads LOG_DIR with
TensorBoard's EventMultiplexer and its HParams plugin's protobufs, and
checks against the sweep's state file: one experiment naming every
parameter, one session per trial with its values, its end status (failed
trials FAILURE) and its last validation accuracy as a scalar. Exit 0 when
all agree, 1 otherwise, 77 when tensorboard cannot be imported.
"""
import json
import sys

try:
    import numpy as np
    from tensorboard.backend.event_processing import event_multiplexer
    from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
except ImportError as e:
    print(f"tensorboard is not importable: {e}")
    sys.exit(77)


def main(log_dir, state_path):
    with open(state_path, encoding="utf-8") as f:
        state = json.load(f)
    mux = event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(log_dir)
    mux.Reload()
    content = mux.PluginRunToTagToContent("hparams")
    problems = []

    experiments = [(run, tags["_hparams_/experiment"]) for run, tags in content.items()
                   if "_hparams_/experiment" in tags]
    if len(experiments) != 1:
        problems.append(f"{len(experiments)} experiments")
    else:
        exp = plugin_data_pb2.HParamsPluginData.FromString(experiments[0][1]).experiment
        names = [h.name for h in exp.hparam_infos]
        wanted = [s.split("=")[0] for s in state["space"]]
        if names != wanted:
            problems.append(f"experiment parameters {names}, sweep {wanted}")
        if "epoch/val_accuracy" not in [m.name.tag for m in exp.metric_infos]:
            problems.append("no epoch/val_accuracy metric")

    sessions = {}
    for run, tags in content.items():
        if "_hparams_/session_start_info" in tags:
            sessions[run] = tags
    print(f"{len(sessions)} sessions, {len(state['trials'])} trials")
    if len(sessions) != len(state["trials"]):
        problems.append(f"{len(sessions)} sessions for {len(state['trials'])} trials")
    for t in state["trials"]:
        run = f"trial-{t['id']:03d}"
        if run not in sessions:
            problems.append(f"no session {run}")
            continue
        start = plugin_data_pb2.HParamsPluginData.FromString(
            sessions[run]["_hparams_/session_start_info"]).session_start_info
        for name, value in t["params"].items():
            if name not in start.hparams:
                problems.append(f"{run}: no value of {name}")
                continue
            v = start.hparams[name]
            if v.HasField("number_value"):
                ok = np.isclose(v.number_value, value, rtol=1e-12)
            else:  # a choice: the value as the sweep's spec wrote it
                ok = v.string_value == str(value)
            if not ok:
                problems.append(f"{run} {name}: {v}, state {value}")
        if t["status"] in ("completed", "pruned", "failed"):
            if "_hparams_/session_end_info" not in sessions[run]:
                problems.append(f"{run}: no session_end_info")
            else:
                end = plugin_data_pb2.HParamsPluginData.FromString(
                    sessions[run]["_hparams_/session_end_info"]).session_end_info
                want = api_pb2.STATUS_FAILURE if t["status"] == "failed" else api_pb2.STATUS_SUCCESS
                if end.status != want:
                    problems.append(f"{run}: status {end.status}, trial {t['status']}")
            pruned = [e.value for e in mux.Scalars(run, "trial/pruned")]
            if pruned != [1.0 if t["status"] == "pruned" else 0.0]:
                problems.append(f"{run}: trial/pruned {pruned}, trial {t['status']}")
        if t["metrics"]:
            last = mux.Scalars(run, "epoch/val_accuracy")[-1]
            want = t["metrics"][-1]["val_accuracy"]
            if np.float32(last.value) != np.float32(want):
                problems.append(f"{run}: last val_accuracy {last.value}, state {want}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
