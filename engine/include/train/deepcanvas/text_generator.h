#pragma once
// Sampling text from a character model, for `deepcanvas-cli generate` and
// the Inference tab. The model reads windows of T token ids and scores the
// next token: [V] (LastStep -> Dense) or [T, V] (a prediction at every
// step, sampled at the last). Token 0 is padding; id i > 0 is vocab[i].
#include <deepcanvas/plan.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dc {

struct GenerateOptions {
  int64_t length = 200;      // characters to add
  double temperature = 0.8;  // > 0; lower is more conservative
  int64_t top_k = 0;         // sample among the k likeliest; 0: all
  uint64_t seed = 1;
};

class TextGenerator {
 public:
  // plan holds the trained weights (batch >= 1); vocab is the checkpoint's
  // class_names. Throws Error when the network is not a character model
  // (input_is_tokens, plan.h) or predicts a different number of tokens than
  // vocab has.
  TextGenerator(Plan& plan, std::vector<std::string> vocab);
  // The prompt's token ids; throws DataError naming a character the
  // training text never had (what names the prompt in the message).
  std::vector<int32_t> encode(const std::string& prompt, const std::string& what) const;
  // The prompt followed by o.length sampled characters. `cancelled`, when
  // set, is asked between characters; the text so far is returned.
  std::string generate(const std::string& prompt, const GenerateOptions& o,
                       const std::function<bool()>& cancelled = {},
                       const std::string& what = "the prompt");

 private:
  Plan& plan_;
  std::vector<std::string> vocab_;
  std::map<std::string, int32_t> index_;
  int64_t window_ = 0, last_ = 0;  // input steps; offset of the last step's scores
};

}  // namespace dc
