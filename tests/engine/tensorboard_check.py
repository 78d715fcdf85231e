"""TensorBoard's own reader on a DeepCanvas run folder (issue 35).

Usage: tensorboard_check.py RUN_DIR [--killed]. Loads the folder with
TensorBoard's EventAccumulator and compares every scalar with the run's
metrics.jsonl: each figure of a step, epoch, validation or telemetry record
must be a scalar "KIND/FIELD" (telemetry: "gpu/FIELD") at the record's
step, equal to float32 precision, and no scalar may be left over.
--killed: the run was killed, perhaps inside its last metrics.jsonl line
or between that line and its event, so a cut last line is skipped and the
figures of the log's last step may be missing from the event file. Exit 0
when all agree, 1 with the differences otherwise, 77 when tensorboard
cannot be imported.
"""
import json
import logging
import sys

try:
    import numpy as np
    from tensorboard.backend.event_processing import event_accumulator
except ImportError as e:  # the caller skips, saying so
    print(f"tensorboard is not importable: {e}")
    sys.exit(77)

# Fields of the records that are bookkeeping, not figures.
NOT_FIGURES = {"kind", "step", "epoch", "step_in_epoch", "steps_per_epoch", "elapsed_s", "best"}
PREFIX = {"step": "step", "epoch": "epoch", "validation": "validation", "telemetry": "gpu"}


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def main(run_dir, killed=False):
    warnings = Collect()
    logging.getLogger().addHandler(warnings)
    acc = event_accumulator.EventAccumulator(
        run_dir, size_guidance={event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0})
    acc.Reload()
    problems = [f"reader warning: {m}" for m in warnings.messages]

    expected = {}
    with open(f"{run_dir}/metrics.jsonl", encoding="utf-8") as f:
        for line in f:
            if killed and not line.endswith("\n"):
                continue  # cut by the kill
            rec = json.loads(line)
            prefix = PREFIX.get(rec["kind"])
            if prefix is None:
                continue
            for k, v in rec.items():
                if k in NOT_FIGURES or not isinstance(v, (int, float)) or isinstance(v, bool):
                    continue
                expected[(f"{prefix}/{k}", rec["step"])] = v

    got = {}
    for tag in acc.Tags()["scalars"]:
        for ev in acc.Scalars(tag):
            if (tag, ev.step) in got:
                problems.append(f"{tag} twice at step {ev.step}")
            got[(tag, ev.step)] = ev.value
    last_step = max((step for _, step in expected), default=0)
    for key, v in sorted(expected.items()):
        if key not in got and killed and key[1] == last_step:
            continue
        if key not in got:
            problems.append(f"{key[0]} at step {key[1]}: in metrics.jsonl ({v}), not in the event file")
        elif np.float32(v) != np.float32(got[key]):
            problems.append(f"{key[0]} at step {key[1]}: metrics.jsonl {v}, event file {got[key]}")
    for key in sorted(set(got) - set(expected)):
        problems.append(f"{key[0]} at step {key[1]}: in the event file only")
    if "settings" not in acc.Tags()["tensors"]:
        problems.append(f"no 'settings' text; tensors: {acc.Tags()['tensors']}")
    elif b"epochs" not in acc.Tensors("settings")[0].tensor_proto.string_val[0]:
        problems.append("the 'settings' text does not name the epochs")
    if acc.file_version != 2.0:
        problems.append(f"file_version {acc.file_version}")

    print(f"{len(expected)} figures in metrics.jsonl, {len(got)} scalars in the event file")
    for p in problems:
        print(p)
    return 1 if problems or not expected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], "--killed" in sys.argv[2:]))
