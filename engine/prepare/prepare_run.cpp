#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/prepare_run.h>
#include <deepcanvas/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace dc {

namespace fs = std::filesystem;

namespace {

std::string gib(int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(int64_t(1) << 30));
  return buf;
}

RunProblem problem(RunProblem::Kind kind, std::string message, std::string subject,
                   bool warning = false) {
  RunProblem p{kind, std::move(message), warning};
  p.subject = std::move(subject);
  return p;
}

bool trains(RunPurpose p) {
  return p == RunPurpose::Train || p == RunPurpose::Sweep || p == RunPurpose::LrFind ||
         p == RunPurpose::BatchFit;
}

const char* memory_what(RunPurpose p, int concurrent) {
  switch (p) {
    case RunPurpose::LrFind:
      return "the LR range test";
    case RunPurpose::Sweep:
      return concurrent > 1 ? "sweep trials at once" : "a sweep trial";
    case RunPurpose::Advise:
      return "profiling";
    default:
      return "training";
  }
}

// A GPU the run asks for and this machine cannot give: blocking when asked
// for explicitly, else the CPU with a warning (a project saved on a GPU
// machine still trains here, the same numbers up to rounding).
void choose_device(const PrepareOptions& o, PreparedRun& r) {
  if (!r.config.device.cuda) return;
  std::string why;
  std::string unavailable;
  if (DeviceBackend* b = cuda_backend(&why)) {
    const auto gpus = b->devices();
    if (r.config.device.index < 0 || r.config.device.index >= int(gpus.size()))
      unavailable = "device '" + r.config.device.str() +
                    "' does not exist: " + std::to_string(gpus.size()) + " CUDA device(s) found";
  } else {
    unavailable = "device '" + r.config.device.str() + "' is not available: " + why;
  }
  if (unavailable.empty()) return;
  if (o.device_requested) {
    r.problems.push_back(problem(RunProblem::Kind::Device, unavailable, "training.device"));
    return;
  }
  r.device_fallback = why.empty() ? unavailable : why;
  r.problems.push_back(problem(RunProblem::Kind::Device,
                               "the project asks for " + r.config.device.str() + ", but " +
                                   r.device_fallback +
                                   (trains(o.purpose) ? "; training" : "; running") + " on the CPU",
                               "training.device", true));
  r.config.device = DeviceSpec{};
  if (r.config.precision != Precision::Fp32) {
    r.problems.push_back(problem(RunProblem::Kind::Device,
                                 std::string(enum_name(r.config.precision)) +
                                     " precision needs a GPU; the CPU computes in fp32",
                                 "training.precision", true));
    r.config.precision = Precision::Fp32;
  }
}

// The data against the network: shapes, classes, empty splits. Settings
// were checked before the data was read.
void check_data(const Project& p, const PrepareOptions& o, const Dataset* train,
                const Dataset* test, PreparedRun& r) {
  const bool optional = o.data == DataNeed::Optional;
  std::vector<RunProblem> data_problems = run_problems(p.graph, r.config, train, test);
  for (RunProblem& problem : data_problems) {
    if (problem.kind != RunProblem::Kind::Data) continue;
    // Augmentation's problem is a setting's, found above for a training
    // run and irrelevant to the others.
    if (problem.subject.rfind("training.", 0) == 0) continue;
    // Evaluation and prediction use the test set alone: an empty training
    // split (a folder of test/ images only) does not stop them.
    if (!trains(o.purpose) && o.purpose != RunPurpose::Advise &&
        problem.message.find("training set") != std::string::npos)
      problem.warning = true;
    if (optional) problem.warning = true;
    r.problems.push_back(std::move(problem));
  }
}

}  // namespace

std::string describe_dataset(const DatasetSpec& s, const ProjectData& loaded) {
  const std::string& where = loaded.dir;
  std::string text;
  if (s.path.rfind("sample:", 0) == 0)
    text = "bundled sample: " + s.path.substr(7);
  else if (s.kind == "image_folder")
    text = "image folder: " + where;
  else if (s.kind == "image_csv")
    text = "image list: " + where;
  else if (s.kind == "csv_sequence")
    text = "CSV series: " + where;
  else if (s.kind == "text")
    text = "text corpus: " + where;
  else
    text = "IDX folder: " + where;
  const Shape& shape = loaded.data.train.sample_shape;
  // Image kinds are always decoded at the Input's size; other images only
  // when the project asks for preprocessing, which is worth saying.
  if (s.preprocess.active() && !s.is_images() && shape.rank() == 3)
    text +=
        " (resized to " + std::to_string(shape[1]) + ", " + std::to_string(shape[0]) + " channels)";
  return text;
}

RunProblem cpu_memory_problem(const Graph& g, const TrainConfig& c, const std::string& what,
                              int concurrent) {
  RunProblem p{RunProblem::Kind::Memory, ""};
  if (c.device.cuda) return p;  // the GPU's memory is checked when the device starts
  concurrent = std::max(1, concurrent);
  const int64_t available = available_memory_bytes();
  if (available < 0) return p;  // unknown: nothing to compare with
  // Each of `concurrent` runs gets its share of the memory.
  const BatchFit fit = largest_batch(g, available / concurrent, c);
  if (fit.batch_bytes * concurrent <= available) return p;
  p.subject = "training.batch";
  p.needed_bytes = fit.batch_bytes * concurrent;
  p.available_bytes = available;
  p.suggested_batch = std::max<int64_t>(0, fit.max_batch);
  const std::string who = concurrent > 1 ? std::to_string(concurrent) + " " + what : what;
  p.message = who + " at batch " + std::to_string(c.batch) + " needs about " + gib(p.needed_bytes) +
              " of memory but " + gib(available) + " is available" +
              (fit.max_batch >= 1 ? "; a batch of about " + std::to_string(fit.max_batch) + " fits"
                                  : "; even one sample does not fit: make the network smaller");
  return p;
}

RunProblem output_problem(const RunOutput& out) {
  RunProblem p{RunProblem::Kind::Output, ""};
  if (out.path.empty()) return p;
  p.subject = out.role;
  p.path = out.path;
  fs::path dir = out.is_dir ? fs::path(out.path) : fs::path(out.path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    p.reason = ec.message();
    p.message = out.role + " " + out.path + ": cannot create the folder " + dir.string() + " (" +
                p.reason + "); choose another path";
    return p;
  }
  if (!out.is_dir && fs::is_directory(out.path)) {
    p.reason = "is a folder";
    p.message = out.role + " " + out.path + " is a folder; give a file name such as " +
                (fs::path(out.path) / "model.safetensors").string();
    return p;
  }
  // A probe file proves the folder takes new files (permissions, read-only
  // mounts, a full quota) the way the checkpoint's temp file will need.
  const fs::path probe = dir / (".deepcanvas-write-test-" + std::to_string(::getpid()));
  {
    std::ofstream f(probe);
    const bool opened = bool(f);
    const int err = errno;
    if (!opened || !(f << "x") || !f.flush()) {
      std::error_code ignore;
      fs::remove(probe, ignore);
      p.reason = std::generic_category().message(opened ? EIO : err);
      p.message = out.role + " " + out.path + ": cannot write into " + dir.string() + " (" +
                  p.reason + "); choose a writable folder";
      return p;
    }
  }
  fs::remove(probe, ec);
  return p;
}

PreparedRun prepare_run(const Project& p, const PrepareOptions& o) {
  PreparedRun r;
  r.config = o.config;
  choose_device(o, r);
  auto blocked = [&] { return r.first_blocking() != nullptr; };

  // Settings and the network, before anything is read or allocated.
  for (RunProblem& problem : network_problems(p.graph, r.config))
    if (trains(o.purpose) || problem.kind == RunProblem::Kind::Network)
      r.problems.push_back(std::move(problem));

  for (const RunOutput& out : o.outputs)
    if (RunProblem problem = output_problem(out); !problem.message.empty())
      r.problems.push_back(std::move(problem));

  const bool memory_purpose = o.purpose == RunPurpose::Train || o.purpose == RunPurpose::Sweep ||
                              o.purpose == RunPurpose::LrFind || o.purpose == RunPurpose::Advise;
  if (o.check_memory && memory_purpose && !blocked())
    if (RunProblem problem = cpu_memory_problem(p.graph, r.config,
                                                memory_what(o.purpose, o.concurrent), o.concurrent);
        !problem.message.empty())
      r.problems.push_back(std::move(problem));

  if (o.data == DataNeed::None || blocked()) return r;
  if (o.given_data) {
    check_data(p, o, o.train, o.test, r);
    return r;
  }
  const bool optional = o.data == DataNeed::Optional;
  if (o.data_override.empty() && p.dataset.path.empty()) {
    r.problems.push_back(problem(RunProblem::Kind::Data,
                                 "the project names no dataset (dataset.path is empty)",
                                 "dataset.path", optional));
    return r;
  }
  try {
    r.data = load_project_dataset(p, o.data_override);
    r.loaded = true;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const Error& e) {
    RunProblem problem{RunProblem::Kind::Data, e.what(), optional};
    problem.subject = o.data_override.empty() ? p.dataset.path : o.data_override;
    r.problems.push_back(std::move(problem));
    return r;
  }
  check_data(p, o, &r.data.data.train, &r.data.data.test, r);
  return r;
}

}  // namespace dc
