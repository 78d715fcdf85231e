#pragma once
// What several commands share: the PROJECT operand, the check before a
// network is built (the checks before a run are preflight.h's), a trained model loaded for
// inference, and a duration written as a clock.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "args.h"

namespace dc::cli {

// The project named by the first operand; throws when there is none.
Project load_project_operand(const Args& a);

// "note: ..." on stderr, nothing for an empty note.
void print_note(const std::string& note);

// Refuses a network that cannot be built, before allocating; settings are
// not checked (summary, advise, export).
void check_network_builds(const Project& p);

// A trained model ready for forward passes: the project, its checkpoint in
// an inference plan, the input normalisation and the class names.
struct Loaded {
  Project project;
  std::unique_ptr<Plan> plan;
  CheckpointInfo ck;
  float mean = 0, stddev = 1;
  std::vector<std::string> class_names;
};

// The PROJECT operand with --checkpoint's weights in a plan for `batch`.
Loaded load_trained(const Args& a, int64_t batch);

// "mm:ss" or "h:mm:ss"; "--:--" for an unknown duration.
std::string clock_text(double s);

}  // namespace dc::cli
