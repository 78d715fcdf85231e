#include "common.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/preflight.h>

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace dc::cli {

Project load_project_operand(const Args& a) {
  if (a.positional.empty()) throw Error("missing PROJECT (a .dcproj file)");
  return load_project(a.positional[0]);
}

void print_note(const std::string& note) {
  if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
}

void check_network_builds(const Project& p) {
  for (const RunProblem& problem : network_problems(p.graph, p.training))
    if (problem.kind == RunProblem::Kind::Network) throw_problem(problem);
}

Loaded load_trained(const Args& a, int64_t batch) {
  Loaded l;
  l.project = load_project_operand(a);
  std::string ck = a.get("checkpoint", "");
  if (ck.empty()) throw Error("missing --checkpoint FILE (written by 'train --checkpoint')");
  // eval, run and predict only run forward: layers share output buffers.
  l.plan = std::make_unique<Plan>(l.project.graph, batch, Plan::Use::Inference);
  l.ck = read_checkpoint(ck);
  l.plan->load_state(l.ck.model, ck);
  try {
    l.mean = std::stof(l.ck.metadata.at("mean"));
    l.stddev = std::stof(l.ck.metadata.at("stddev"));
    auto names = nlohmann::json::parse(l.ck.metadata.at("class_names"), nullptr, false);
    if (names.is_array())
      for (auto& n : names)
        if (n.is_string()) l.class_names.push_back(n);
  } catch (const std::exception&) {
    throw IoError(ck + ": checkpoint metadata lacks the input normalisation (mean/stddev)");
  }
  return l;
}

std::string clock_text(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  // Estimates come from measured and catalog figures; a wild one (a GPU row
  // of 0.001 TFLOP/s) must not overflow the int below.
  if (s >= 100 * 3600) return ">99:59:59";
  int t = int(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%02d:%02d", t / 60, t % 60);
  return buf;
}

}  // namespace dc::cli
