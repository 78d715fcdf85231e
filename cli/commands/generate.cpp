// Text generation from a character model. The vocabulary travels in the
// checkpoint (class_names), so generation needs no corpus; when the project's
// corpus is readable it is checked against that vocabulary, because a
// checkpoint trained on another text would silently map ids to the wrong
// characters.
#include "commands.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/text_generator.h>
#include <deepcanvas/trainer.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../common.h"

namespace dc::cli {
namespace {

std::vector<std::string> checkpoint_vocabulary(const CheckpointInfo& ck, const std::string& path) {
  auto it = ck.metadata.find("class_names");
  auto names = it == ck.metadata.end() ? nlohmann::json()
                                       : nlohmann::json::parse(it->second, nullptr, false);
  std::vector<std::string> vocab;
  if (names.is_array())
    for (auto& n : names)
      if (n.is_string()) vocab.push_back(n.get<std::string>());
  if (vocab.size() < 2)
    throw DataError(path +
                    ": the checkpoint has no character vocabulary; 'generate' needs a "
                    "model trained on a text dataset (kind \"text\")");
  return vocab;
}

// The corpus's vocabulary must be the checkpoint's, id for id.
void check_corpus(const Project& p, const std::vector<std::string>& vocab,
                  const std::string& ck_path) {
  std::string corpus;
  try {
    corpus = resolve_dataset_dir(p);
  } catch (const Error&) {
    return;  // no corpus here: the checkpoint's vocabulary is all there is
  }
  if (!std::filesystem::is_regular_file(corpus)) return;
  TrainTest tt = load_text_dataset(corpus, {1, 1, 0.0});
  const auto& cv = tt.train.class_names;
  if (cv != vocab)
    throw DataError(ck_path + " was trained on a text with a different vocabulary (" +
                    std::to_string(vocab.size() - 1) + " characters) than " + corpus + " (" +
                    std::to_string(cv.size() - 1) +
                    " characters); use the checkpoint with the corpus it was trained on");
}

int cmd_generate(const Args& a) {
  Project p = load_project_operand(a);
  const std::string ck_path = a.get("checkpoint", "");
  if (ck_path.empty()) throw Error("missing --checkpoint FILE (written by 'train --checkpoint')");
  GenerateOptions o;
  o.length = a.get_int("length", 200, 1, 1000000);
  o.temperature = a.get_double("temperature", 0.8, 1e-3, 100.0);
  o.top_k = a.get_int("top-k", 0, 0, 1 << 20);  // 0: the whole vocabulary
  o.seed = static_cast<uint64_t>(a.get_int("seed", 1, 0, INT64_MAX));
  const std::string prompt = a.get("prompt", "");

  Plan plan(p.graph, 1);
  if (!input_is_tokens(plan.steps()))
    throw Error(p.name +
                ": 'generate' needs a character model whose input is a token sequence "
                "(SequenceInput with kind \"tokens\"); this network's input is " +
                plan.input_shape().str());
  CheckpointInfo ck = read_checkpoint(ck_path);
  std::vector<std::string> vocab = checkpoint_vocabulary(ck, ck_path);
  std::unique_ptr<TextGenerator> gen;
  try {
    gen = std::make_unique<TextGenerator>(plan, vocab);
  } catch (const Error& e) {
    throw Error(ck_path + ": " + e.what());
  }
  plan.load_state(ck.model, ck_path);
  check_corpus(p, vocab, ck_path);
  std::printf("%s\n", gen->generate(prompt, o, {}, "--prompt").c_str());
  return 0;
}

}  // namespace

const Command& generate_command() {
  static const Command cmd{.name = "generate",
                           .operands = "PROJECT",
                           .summary = "Sample text from a character model.",
                           .options = {{"checkpoint", "FILE", "the trained model"},
                                       {"prompt", "TEXT", "text to start from"},
                                       {"length", "N", "characters to generate (default 200)"},
                                       {"temperature", "T", "sampling temperature (default 0.8)"},
                                       {"top-k", "K", "sample among the K likeliest (0: all)"},
                                       {"seed", "N", "random seed (default 1)"}},
                           .run = cmd_generate};
  return cmd;
}

}  // namespace dc::cli
