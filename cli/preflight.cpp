#include "preflight.h"

#include <deepcanvas/errors.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "common.h"

namespace dc::cli {

namespace {

// Settings the engine names as a remedy that have a flag of their own.
const std::vector<std::pair<std::string, std::string>>& key_flags() {
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"training.init_weights", "--init-weights"},
      {"training.resume", "--resume"},
      {"training.epochs", "--epochs"},
  };
  return keys;
}

// "cat 10, dog 12" for the items of one split.
std::string per_class(const std::vector<ImageItem>& items,
                      const std::vector<std::string>& classes) {
  std::vector<int64_t> n(classes.size(), 0);
  for (const ImageItem& it : items)
    if (it.label >= 0 && size_t(it.label) < n.size()) ++n[size_t(it.label)];
  std::string s;
  for (size_t c = 0; c < classes.size(); ++c)
    s += (c ? ", " : "") + classes[c] + " " + std::to_string(n[c]);
  return s;
}

void print_files(const char* what, const std::vector<SkippedFile>& files, int64_t count) {
  if (count <= 0) return;
  constexpr size_t kNamed = 5;
  std::fprintf(stderr, "  %s %lld file%s:", what, (long long)count, count == 1 ? "" : "s");
  for (size_t i = 0; i < std::min(kNamed, files.size()); ++i)
    std::fprintf(stderr, "%s %s (%s)", i ? ";" : "", files[i].path.c_str(), files[i].why.c_str());
  if (count > int64_t(std::min(kNamed, files.size())))
    std::fprintf(stderr, "; and %lld more",
                 (long long)(count - int64_t(std::min(kNamed, files.size()))));
  std::fprintf(stderr, "\n");
}

}  // namespace

std::string with_flags(std::string message) {
  for (const auto& [key, flag] : key_flags())
    for (size_t at = message.find(key); at != std::string::npos;
         at = message.find(key, at + flag.size()))
      message.replace(at, key.size(), flag);
  return message;
}

std::string cli_words(const RunProblem& problem, const std::string& batch_option) {
  switch (problem.kind) {
    case RunProblem::Kind::Memory:
      return problem.message + ". Lower " + batch_option + " (nothing was run)";
    case RunProblem::Kind::Output:
      return problem.message + ". Nothing was trained.";
    case RunProblem::Kind::Device:
      if (problem.subject == "training.device")
        return problem.message + ". Use --device cpu to run on the CPU";
      if (problem.subject == "training.precision")
        return problem.message + " (--precision fp32, or --device cuda)";
      return problem.message;
    case RunProblem::Kind::Data:
      if (problem.subject == "dataset.path") return problem.message + "; pass --data FOLDER";
      return problem.message;
    default:
      return with_flags(problem.message);
  }
}

void throw_cli_problem(const RunProblem& problem, const std::string& batch_option) {
  RunProblem worded = problem;
  worded.message = cli_words(problem, batch_option);
  throw_problem(worded);
}

void check_writable(const std::string& option, const std::string& path, bool is_dir) {
  if (const RunProblem p = output_problem({option, path, is_dir}); !p.message.empty())
    throw_cli_problem(p);
}

void print_image_summary(const ImageDataReport& report, const Project& p) {
  const ImageList& l = report.list;
  if (l.class_names.empty() && l.root.empty()) return;  // not an image dataset
  std::fprintf(stderr, "images in %s: %zu classes\n", l.root.c_str(), l.class_names.size());
  std::fprintf(stderr, "  train %zu (%s)\n", l.train.size(),
               per_class(l.train, l.class_names).c_str());
  if (!l.val.empty())
    std::fprintf(stderr, "  val %zu (%s)\n", l.val.size(), per_class(l.val, l.class_names).c_str());
  std::fprintf(stderr, "  test %zu (%s)\n", l.test.size(),
               per_class(l.test, l.class_names).c_str());
  for (const std::string& c : l.empty_classes)
    std::fprintf(stderr, "  class folder %s holds no usable image; left out\n", c.c_str());
  print_files("skipped", l.skipped, int64_t(l.skipped.size()));
  if (!report.mode_note.empty()) std::fprintf(stderr, "  %s\n", report.mode_note.c_str());
  if (!report.picture_note.empty())
    std::fprintf(stderr, "  files: %s\n", report.picture_note.c_str());
  // The command that makes the Input the note advises (the app has a button).
  const Shape& s = report.suggested_input;
  if (s.rank() != 3 || p.file.empty()) return;
  for (const auto& [id, n] : p.graph.nodes())
    if (n.type == "Input") {
      std::fprintf(stderr,
                   "  to use a %s Input: deepcanvas-cli edit %s --set %s.shape=%lldx%lldx%lld\n",
                   s.str().c_str(), p.file.c_str(), n.name.c_str(), (long long)s[0],
                   (long long)s[1], (long long)s[2]);
      return;
    }
}

void print_bad_images(const Dataset& train, const Dataset& test) {
  for (const Dataset* d : {&train, &test}) {
    if (!d->images) continue;
    const BadImageLog bad = d->images->bad();
    if (bad.count == 0) continue;
    std::fprintf(stderr, "note: %lld bad image%s found while reading the %s set, skipped:\n",
                 (long long)bad.count, bad.count == 1 ? "" : "s",
                 d == &train ? "training" : "test");
    print_files("bad", bad.files, bad.count);
  }
}

PreparedRun prepare(const Project& p, const Args& a, const CliPrepare& o) {
  PrepareOptions po;
  po.purpose = o.purpose;
  po.config = o.config;
  po.data_override = a.get("data", "");
  po.data = o.data;
  po.device_requested = o.device_requested < 0 ? a.has("device") : o.device_requested != 0;
  po.outputs = o.outputs;
  po.concurrent = o.concurrent;
  po.check_memory = o.check_memory;
  PreparedRun r = prepare_run(p, po);
  if (const RunProblem* blocking = r.first_blocking()) throw_cli_problem(*blocking, o.batch_option);
  for (const RunProblem& problem : r.problems) {
    if (!problem.warning) continue;
    std::string text = problem.message;
    if (problem.kind == RunProblem::Kind::Device && problem.subject == "training.device")
      text += " (--device cpu chooses it without this note)";
    print_note(text);
  }
  if (r.loaded) {
    print_note(r.data.note);
    if (!o.quiet) print_image_summary(r.data.images, p);
  }
  return r;
}

}  // namespace dc::cli
