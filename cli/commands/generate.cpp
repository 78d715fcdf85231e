// Text generation from a character model. The vocabulary travels in the
// checkpoint (class_names), so generation needs no corpus; when the project's
// corpus is readable it is checked against that vocabulary, because a
// checkpoint trained on another text would silently map ids to the wrong
// characters.
#include "commands.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/trainer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
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

std::string printable(const std::string& c) {
  return c == "\n" ? "\\n" : c == "\t" ? "\\t" : c;
}

int cmd_generate(const Args& a) {
  Project p = load_project_operand(a);
  const std::string ck_path = a.get("checkpoint", "");
  if (ck_path.empty()) throw Error("missing --checkpoint FILE (written by 'train --checkpoint')");
  const int64_t length = a.get_int("length", 200, 1, 1000000);
  const double temperature = a.get_double("temperature", 0.8, 1e-3, 100.0);
  const int64_t top_k = a.get_int("top-k", 0, 0, 1 << 20);  // 0: the whole vocabulary
  Rng rng(static_cast<uint64_t>(a.get_int("seed", 1, 0, INT64_MAX)));
  const std::string prompt = a.get("prompt", "");

  Plan plan(p.graph, 1);
  const Shape& in = plan.input_shape();
  if (in.rank() != 1)
    throw Error(p.name +
                ": 'generate' needs a character model whose input is a token sequence "
                "(SequenceInput with kind \"tokens\"); this network's input is " +
                in.str());
  const int64_t T = in[0];
  CheckpointInfo ck = read_checkpoint(ck_path);
  std::vector<std::string> vocab = checkpoint_vocabulary(ck, ck_path);
  // A network that predicts every step of its window is sampled at the last.
  const int64_t scored = scored_classes(in, plan.output_shape(), true);
  const int64_t last = plan.output_shape().numel() - scored;
  if (scored != int64_t(vocab.size()))
    throw Error(ck_path + ": the checkpoint's vocabulary has " + std::to_string(vocab.size()) +
                " tokens but the network predicts " + std::to_string(scored) +
                "; set the last Dense layer's units (and the Embedding's vocab_size) to " +
                std::to_string(vocab.size()));
  plan.load_state(ck.model, ck_path);
  check_corpus(p, vocab, ck_path);

  std::map<std::string, int32_t> index;
  for (size_t i = 1; i < vocab.size(); ++i) index[vocab[i]] = int32_t(i);
  std::vector<int32_t> ids;
  for (const std::string& c : utf8_chars(prompt, "--prompt")) {
    auto it = index.find(c);
    if (it == index.end())
      throw DataError("--prompt: the character '" + printable(c) +
                      "' never occurs in the training text, so the model has no token for it; "
                      "use characters from the corpus");
    ids.push_back(it->second);
  }

  std::string out = prompt;
  Tensor x(in.with_batch(1));
  RunContext ctx{false, nullptr};
  std::vector<double> prob(vocab.size());
  std::vector<int> order(vocab.size());
  for (int64_t step = 0; step < length; ++step) {
    // The window the model was trained on: the last T tokens, padded with
    // token 0 at the front as at the start of the corpus.
    for (int64_t k = 0; k < T; ++k) {
      int64_t src = int64_t(ids.size()) - T + k;
      x.f32()[k] = src < 0 ? 0.f : float(ids[size_t(src)]);
    }
    const float* logits = plan.forward(x, ctx).f32() + last;
    // Token 0 is padding, never a character to emit.
    double mx = -1e300;
    for (size_t i = 1; i < vocab.size(); ++i) mx = std::max(mx, double(logits[i]));
    for (size_t i = 0; i < vocab.size(); ++i) order[i] = int(i);
    prob[0] = 0;
    for (size_t i = 1; i < vocab.size(); ++i)
      prob[i] = std::exp((double(logits[i]) - mx) / temperature);
    std::sort(order.begin(), order.end(), [&](int l, int r) { return prob[l] > prob[r]; });
    size_t keep = top_k > 0 ? std::min<size_t>(size_t(top_k), vocab.size()) : vocab.size();
    double total = 0;
    for (size_t i = 0; i < keep; ++i) total += prob[order[i]];
    double u = rng.uniform(0.0f, 1.0f) * total;
    int pick = order[0];
    for (size_t i = 0; i < keep; ++i) {
      u -= prob[order[i]];
      if (u <= 0) {
        pick = order[i];
        break;
      }
    }
    ids.push_back(pick);
    out += vocab[size_t(pick)];
  }
  std::printf("%s\n", out.c_str());
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
