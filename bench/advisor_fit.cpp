// Fits the advisor's GPU step-time constants (advisor::GpuModel) to measured
// training runs: the raw file bench/advisor_accuracy.py --device cuda writes
// on a lent GPU (one JSON line per template and batch, fp32, with the run's
// measured step time) and that GPU's bench-device figures (the cache file
// the same call wrote). Minimises the sum of squared log errors of the
// predicted step time by coordinate descent over the constants in log space,
// then prints the fitted constants and every row before and after.
// --fit-peers adds the DeepCanvas runs of bench/gpu_peers.py's JSON files
// (other networks, batches and precisions on the same kind of GPU) to the
// fit, and with them the 16-bit efficiencies; --check predicts such runs
// without fitting them. The fp32 matrix-layer efficiency (Dense) stays as
// it is: these networks' fp32 Dense layers are too small to tell it.
// Issue 32 item 4; docs/BENCHMARKS.md, "Advisor on a GPU".
//
//   advisor_fit RAW.jsonl BENCH.json [--fit-peers PEERS.json]... [--check PEERS.json]...
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/step_time.h>
#include <deepcanvas/enum_names.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/project.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

using dc::advisor::GpuModel;

struct Row {
  std::string name;
  int64_t batch = 0;
  dc::Precision precision = dc::Precision::Fp32;
  double measured_s = 0;  // seconds per step
  const dc::Graph* graph = nullptr;
};

struct Knob {
  const char* name;
  double* value;
};
// The 16-bit efficiencies move only when 16-bit runs are fitted.
std::vector<Knob> knobs(GpuModel& m, bool low) {
  std::vector<Knob> k = {{"conv_efficiency", &m.conv_efficiency},
                         {"rnn_efficiency", &m.rnn_efficiency},
                         {"rnn_time_step", &m.rnn_time_step},
                         {"bandwidth_efficiency", &m.bandwidth_efficiency},
                         {"layer_overhead", &m.layer_overhead},
                         {"step_overhead", &m.step_overhead},
                         {"eager_step_overhead", &m.eager_step_overhead}};
  if (low) {
    k.push_back({"conv_efficiency_low", &m.conv_efficiency_low});
    k.push_back({"matmul_efficiency_low", &m.matmul_efficiency_low});
  }
  return k;
}

double predict(const Row& r, const dc::advisor::DeviceBench& b, const GpuModel& m) {
  return dc::advisor::predict_step_time(*r.graph, r.batch,
                                        dc::advisor::gpu_rates(b, r.precision, m))
      .step_s;
}

double loss(const std::vector<Row>& rows, const dc::advisor::DeviceBench& b, const GpuModel& m) {
  double s = 0;
  for (const Row& r : rows) {
    const double e = std::log(predict(r, b, m) / r.measured_s);
    s += e * e;
  }
  return s;
}

void table(const char* title, const std::vector<Row>& rows, const dc::advisor::DeviceBench& b,
           const GpuModel& m) {
  if (rows.empty()) return;
  std::printf(
      "\n%s\n| network | precision | batch | predicted samples/s | measured samples/s | "
      "error |\n| --- | --- | ---: | ---: | ---: | ---: |\n",
      title);
  double worst = 0;
  for (const Row& r : rows) {
    const double pred = predict(r, b, m);
    const double err = r.measured_s / pred - 1;  // (predicted - measured) / measured samples/s
    worst = std::max(worst, std::fabs(err));
    std::printf("| %s | %s | %lld | %.0f | %.0f | %+.0f %% |\n", r.name.c_str(),
                dc::enum_name(r.precision), (long long)r.batch, double(r.batch) / pred,
                double(r.batch) / r.measured_s, 100 * err);
  }
  std::printf("worst |error| %.0f %%\n", 100 * worst);
}

// The word after `flag` in a command line, or "".
std::string arg_after(const std::string& cmd, const std::string& flag) {
  std::istringstream in(cmd);
  for (std::string w; in >> w;)
    if (w == flag && in >> w) return w;
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: advisor_fit RAW.jsonl BENCH.json [--fit-peers PEERS.json]... "
                 "[--check PEERS.json]...\n");
    return 2;
  }
  const std::string src = DC_SOURCE_DIR;
  std::vector<std::pair<std::string, bool>> peers;  // file, fitted
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--check" || a == "--fit-peers") peers.emplace_back(argv[i + 1], a == "--fit-peers");
  }
  dc::register_builtin_layers();
  // The GPU's entry of the bench-device cache.
  std::ifstream bf(argv[2]);
  const nlohmann::json cache = nlohmann::json::parse(bf);
  dc::advisor::DeviceBench bench;
  bool found = false;
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it.key().rfind("cuda:", 0) == 0) {
      bench = dc::advisor::bench_from_json(it.value().dump());
      found = true;
    }
  if (!found) {
    std::fprintf(stderr, "%s holds no GPU entry\n", argv[2]);
    return 1;
  }
  std::map<std::string, dc::Project> projects;
  auto graph_of = [&](const std::string& path) {
    if (!projects.count(path)) projects.emplace(path, dc::load_project(path));
    return &projects.at(path).graph;
  };
  std::vector<Row> rows, fitted_peers, checked;
  std::ifstream rf(argv[1]);
  for (std::string line; std::getline(rf, line);) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line);
    Row r;
    r.name = j.at("template").get<std::string>();
    r.batch = j.at("batch").get<int64_t>();
    r.measured_s = j.at("train").at("diagnosis").at("step_seconds").get<double>();
    r.graph = graph_of(src + "/resources/templates/" + r.name + ".dcproj");
    rows.push_back(r);
  }
  // The peers' DeepCanvas runs: the project, batch and precision from the
  // command, the second epoch's samples/s.
  for (const auto& [f, fit] : peers) {
    std::ifstream pf(f);
    const nlohmann::json j = nlohmann::json::parse(pf);
    for (const nlohmann::json& run : j.at("runs")) {
      const std::string cmd = run.value("cmd", "");
      if (cmd.find("deepcanvas-cli train") == std::string::npos) continue;
      const std::string proj = arg_after(cmd, "train");
      size_t cut = proj.find("/resources/");
      if (cut == std::string::npos) cut = proj.find("/bench/");
      if (cut == std::string::npos) continue;
      Row r;
      r.name = proj.substr(proj.rfind('/') + 1);
      r.name = r.name.substr(0, r.name.rfind('.'));
      r.batch = std::stoll(arg_after(cmd, "--batch"));
      r.precision = *dc::enum_from_name<dc::Precision>(arg_after(cmd, "--precision"));
      r.measured_s = double(r.batch) / run.at("steady_samples_per_s").get<double>();
      r.graph = graph_of(src + proj.substr(cut));
      (fit ? fitted_peers : checked).push_back(r);
    }
  }
  std::vector<Row> all = rows;
  all.insert(all.end(), fitted_peers.begin(), fitted_peers.end());
  std::printf("%zu runs fitted; %s: fp32 %.0f GFLOP/s, bf16 %.0f, %.0f GB/s\n", all.size(),
              bench.name.c_str(), bench.fp32_gflops, bench.bf16_gflops, bench.mem_bandwidth_gbs);
  const GpuModel before;
  GpuModel m = before;
  if (m.eager_step_overhead <= 0) m.eager_step_overhead = 1e-3;  // log space needs > 0
  const bool low = !fitted_peers.empty();
  double best = loss(all, bench, m);
  for (double f : {2.0, 1.5, 1.2, 1.1, 1.05, 1.02, 1.01}) {
    for (bool moved = true; moved;) {
      moved = false;
      for (const Knob& knob : knobs(m, low))
        for (double step : {f, 1 / f}) {
          double* v = knob.value;
          const double old = *v;
          *v = old * step;
          const double l = loss(all, bench, m);
          if (l < best - 1e-12) {
            best = l;
            moved = true;
          } else {
            *v = old;
          }
        }
    }
  }
  std::printf("\nfitted GpuModel (sum of squared log errors %.4f, before %.4f):\n", best,
              loss(all, bench, before));
  for (const Knob& knob : knobs(m, true)) std::printf("  %s = %.4g\n", knob.name, *knob.value);
  table("fitted runs, before (the built-in constants)", all, bench, before);
  table("fitted runs, after (the fitted constants)", all, bench, m);
  table("checked runs (not fitted), before", checked, bench, before);
  table("checked runs (not fitted), after", checked, bench, m);
  return 0;
}
