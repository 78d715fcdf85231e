// Safetensors checkpoints: the file format, the checkpoint metadata, the
// weights loaded into a network and the optimizer state checked against its
// parameters (Adam and SGD), as `train --resume` and `eval` do.
//
// DC_FUZZ_WRITE_SEED=FILE writes a valid checkpoint of the target's network
// (the seed in corpus/checkpoint) and exits.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>

#include <cstdlib>
#include <memory>

#include "fuzz_util.h"

namespace {

std::unique_ptr<dc::Plan> g_plan;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dc::register_builtin_layers();
  dc::Project p =
      dc::load_project(std::string(DC_SOURCE_DIR) + "/tests/fuzz/corpus/project/tiny.dcproj");
  g_plan = std::make_unique<dc::Plan>(p.graph, 1);
  if (const char* seed = std::getenv("DC_FUZZ_WRITE_SEED")) {
    std::vector<std::pair<std::string, dc::Tensor>> opt;
    auto params = g_plan->trainable();
    for (size_t k = 0; k < params.size(); ++k) {
      opt.emplace_back("exp_avg." + std::to_string(k), dc::Tensor(params[k]->value.shape()));
      opt.emplace_back("exp_avg_sq." + std::to_string(k), dc::Tensor(params[k]->value.shape()));
    }
    dc::CheckpointMeta m;
    m.epoch = 1;
    m.step = 10;
    m.input_shape = g_plan->input_shape().str(true);
    m.num_classes = 3;
    m.mean = 0.5f;
    m.stddev = 0.25f;
    m.class_names = {"a", "b", "c"};
    m.test_accuracy = 0.5;
    dc::write_checkpoint(seed, g_plan->state(), opt, m);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = dc::fuzz::write_scratch("ck.safetensors", data, size);
  dc::fuzz::expect_clean([&] {
    dc::CheckpointInfo ck = dc::read_checkpoint(path);
    g_plan->load_state(ck.model, path);
    for (dc::OptimizerType type : {dc::OptimizerType::Adam, dc::OptimizerType::Sgd}) {
      dc::OptimizerConfig c;
      c.type = type;
      auto opt = dc::make_optimizer(c);
      dc::fuzz::expect_clean([&] {
        opt->load_state(ck.optimizer, g_plan->trainable(), path);
        opt->set_steps(ck.step, path);
      });
    }
  });
  return 0;
}
