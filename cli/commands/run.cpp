// deepcanvas-cli run: a NumPy array through the trained network, the output
// written as .npy.
#include "commands.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/int8_inference.h>
#include <deepcanvas/npy.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common.h"
#include "../preflight.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

// Arrays in, arrays out: the ecosystem's way to compare a network with its
// PyTorch, onnxruntime or OpenCV counterpart on exactly the same numbers.
int cmd_run(const Args& a) {
  const std::string in_path = a.get("input", ""), out_path = a.get("output", "");
  if (in_path.empty()) throw Error("missing --input X.npy (the network's input, batch first)");
  if (out_path.empty()) throw Error("missing --output Y.npy (where the output is written)");
  check_writable("--output", out_path, false);
  int64_t batch = a.get_int("batch", 64, 1, 1 << 16);
  set_num_threads(int(a.get_int("threads", 0, 0, 1024)));
  NpyArray x = load_npy(in_path);
  // Plan for no more samples than the array holds: a batch of 64 of a large
  // input would reserve memory that one sample never uses.
  if (x.data.shape().rank() > 0) batch = std::clamp<int64_t>(x.data.shape()[0], 1, batch);
  Loaded l = load_trained(a, batch);
  const std::string int8_path = a.get("int8", "");
  std::unique_ptr<QuantizedNetwork> quantized;
  std::unique_ptr<Int8Runner> int8;
  if (!int8_path.empty()) {
    quantized = std::make_unique<QuantizedNetwork>(load_int8_model(int8_path, *l.plan));
    int8 = std::make_unique<Int8Runner>(*quantized, batch);
    if (!a.flag("quiet")) print_note(int8_cpu_note());
  }
  const Shape& in = l.plan->input_shape();
  const std::vector<int64_t>& dims = x.data.shape().dims();
  if (dims.size() != in.rank() + 1 ||
      !std::equal(in.dims().begin(), in.dims().end(), dims.begin() + 1))
    throw DataError(in_path + ": the array's shape is " + Shape(dims).str(true) +
                    " but the network's Input takes N x " + in.str(true) +
                    " (batch first); reshape it to that");
  const int64_t n = dims[0];
  if (n == 0) throw DataError(in_path + ": the array holds no samples (its first dimension is 0)");
  const Shape& out_sample = l.plan->output_shape();
  Tensor y(out_sample.with_batch(n));
  const int64_t in_row = in.numel(), out_row = out_sample.numel();
  const int64_t repeat = a.get_int("repeat", 1, 1, 1000);
  RunContext ctx{false, nullptr};
  // Seconds per pass over the array: the forward passes and their copies,
  // not loading the project, the weights or the array.
  std::vector<double> pass_seconds;
  for (int64_t r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t at = 0; at < n; at += batch) {
      const int64_t b = std::min(batch, n - at);
      Tensor xb(in.with_batch(b));
      std::copy_n(x.data.f32() + at * in_row, b * in_row, xb.f32());
      const Tensor& out = int8 ? int8->forward(xb) : l.plan->forward(xb, ctx);
      std::copy_n(out.f32(), b * out_row, y.f32() + at * out_row);
    }
    pass_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  save_npy(out_path, y);
  if (a.flag("json")) {
    std::vector<double> sorted = pass_seconds;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    std::cout << json({{"samples", n},
                       {"input", x.data.shape().dims()},
                       {"output", y.shape().dims()},
                       {"path", out_path},
                       {"batch", batch},
                       {"threads", num_threads()},
                       {"pass_seconds", pass_seconds},
                       {"samples_per_s", median > 0 ? double(n) / median : 0.0},
                       {"precision", int8 ? "int8" : "fp32"},
                       {"int8_kernels", int8 ? int8->kernels() : std::vector<std::string>{}},
                       {"cpu_isa", int8 ? int8_cpu_isa() : std::string()}})
                     .dump()
              << std::endl;
  } else if (!a.flag("quiet"))
    std::fprintf(stderr, "%lld samples %s -> %s written to %s%s\n", (long long)n,
                 x.data.shape().str(true).c_str(), y.shape().str(true).c_str(), out_path.c_str(),
                 int8 ? " (int8)" : "");
  return 0;
}

}  // namespace

const Command& run_command() {
  static const Command cmd{
      .name = "run",
      .operands = "PROJECT",
      .summary = "Run the network on a NumPy array (inference) and write its output as .npy.",
      .options =
          {{"checkpoint", "FILE", "the trained model"},
           {"input", "X.npy",
            "the network's input, batch first: float32 as the Input takes it (already "
            "normalised), or int64 token ids for an Embedding input"},
           {"output", "Y.npy", "where the float32 output [N, ...] is written"},
           {"batch", "N", "samples per forward pass (default 64)"},
           {"threads", "N", "CPU threads (0: every core)"},
           {"int8", "FILE",
            "run the int8 model (the .int8.json export --precision int8 writes beside the .onnx, "
            "for this checkpoint) with oneDNN's int8 kernels"},
           {"repeat", "N",
            "run the whole array N times (benchmarking: --json lists each pass's seconds; the "
            "output is the last pass's)"},
           {"json", "", "print one JSON object (with the forward passes' seconds and samples/s)"}},
      .run = cmd_run};
  return cmd;
}

}  // namespace dc::cli
