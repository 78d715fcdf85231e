// deepcanvas-cli: train, evaluate and inspect DeepCanvas projects without the
// desktop app. Every failure prints one message (naming the file, node or
// field) and exits non-zero; nothing is written unless it succeeds.
//
// This file lists the commands (each defined in cli/commands/) and
// dispatches to them; cli/args.cpp parses and prints their options.
#include <deepcanvas/device.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/parallel.h>

#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "args.h"
#include "commands/commands.h"
#include "image_input.h"

#ifndef DC_VERSION
#define DC_VERSION "0.0.0"
#endif

namespace dc::cli {
namespace {

// Every command, in the order the usage lists them; the first one's help
// closes the usage.
const std::vector<const Command*>& commands() {
  static const std::vector<const Command*> cmds = {
      &train_command(),  &eval_command(),     &predict_command(),  &run_command(),
      &export_command(), &import_command(),   &transfer_command(), &summary_command(),
      &edit_command(),   &generate_command(), &lr_find_command(),  &batch_fit_command(),
      &sweep_command(),  &devices_command(),  &advise_command(),   &bench_device_command(),
  };
  return cmds;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(usage_text(commands()).c_str(), stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(usage_text(commands()).c_str(), stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf(
        "deepcanvas-cli %s (OpenCV: %s, GEMM: %s, convolutions: %s, OpenMP waits: %s, CUDA: %s)\n",
        DC_VERSION,
        !image_decoding_supported()  ? "off"
        : image_decoding_jpeg_only() ? "JPEG files only"
                                     : "on",
        gemm_backend_name(), cpu_conv_path(), openmp_wait_setting().c_str(), cuda_status().c_str());
    return 0;
  }
  const Command* command = nullptr;
  for (const Command* c : commands())
    if (c->name == cmd) command = c;
  if (!command) {
    std::fprintf(stderr, "deepcanvas-cli: unknown command '%s'\n\n%s", cmd.c_str(),
                 usage_text(commands()).c_str());
    return 2;
  }
  register_builtin_layers();
  Args a = parse_args(*command, argc - 2, argv + 2);
  if (a.has("help")) {
    std::fputs(command_help(*command).c_str(), stdout);
    return 0;
  }
  return command->run(a);
}

}  // namespace
}  // namespace dc::cli

int main(int argc, char** argv) {
  dc::restart_with_openmp_defaults(argv);
  try {
    return dc::cli::run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "deepcanvas-cli: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deepcanvas-cli: %s\n", e.what());
  }
  return 1;
}
