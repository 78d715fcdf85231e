#pragma once
// The CLI's side of prepare_run(): it asks the engine to prepare a run,
// prints the warnings and the image dataset's summary, and words the first
// blocking problem with the flag that fixes it (the engine's messages name
// no flag).
#include <deepcanvas/data.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/prepare_run.h>

#include <string>
#include <vector>

#include "args.h"

namespace dc::cli {

struct CliPrepare {
  RunPurpose purpose = RunPurpose::Train;
  TrainConfig config;
  DataNeed data = DataNeed::Required;
  // Files and folders to write, each named by its flag ("--checkpoint").
  std::vector<RunOutput> outputs;
  int concurrent = 1;
  bool check_memory = true;
  // The device came from a flag (unavailable is then an error); default:
  // whether the command line has --device.
  int device_requested = -1;
  // The flag that set the batch, for the memory problem's remedy.
  std::string batch_option = "--batch";
  // No image summary (the run prints nothing but its result).
  bool quiet = false;
};

// prepare_run() with --data from a; throws the first blocking problem in
// the CLI's words, prints the warnings as notes and, for an image dataset,
// its summary (classes, images per split, skipped files, loading mode).
PreparedRun prepare(const Project& p, const Args& a, const CliPrepare& o);

// The CLI's words for a problem: the engine's sentence and the flag that
// fixes it.
std::string cli_words(const RunProblem& problem, const std::string& batch_option = "--batch");
[[noreturn]] void throw_cli_problem(const RunProblem& problem,
                                    const std::string& batch_option = "--batch");

// Before writing `path` (a file, or with is_dir a folder to write into):
// throws IoError naming `option` and the OS's reason unless it can be
// written. Creates missing parent folders.
void check_writable(const std::string& option, const std::string& path, bool is_dir);

// An engine message that names a setting's key as the remedy
// ("training.resume") with the flag instead (--resume).
std::string with_flags(std::string message);

// The image dataset's summary on stderr (nothing for other kinds), with the
// command that gives p the Input the files suggest.
void print_image_summary(const ImageDataReport& report, const Project& p);

// After a run: images that turned out bad while it read them, named.
void print_bad_images(const Dataset& train, const Dataset& test);

}  // namespace dc::cli
