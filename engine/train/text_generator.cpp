#include <deepcanvas/errors.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/text_generator.h>

#include <algorithm>
#include <cmath>

namespace dc {

TextGenerator::TextGenerator(Plan& plan, std::vector<std::string> vocab)
    : plan_(plan), vocab_(std::move(vocab)) {
  const Shape& in = plan.input_shape();
  if (!input_is_tokens(plan.steps()) || in.rank() != 1)
    throw Error(
        "text generation needs a character model whose input is a token sequence "
        "(SequenceInput with kind \"tokens\"); this network's input is " +
        in.str());
  if (vocab_.size() < 2)
    throw Error("the weights have no character vocabulary; train the model on a text dataset");
  window_ = in[0];
  // A network that predicts every step of its window is sampled at the last.
  const int64_t scored = scored_classes(in, plan.output_shape(), true);
  last_ = plan.output_shape().numel() - scored;
  if (scored != int64_t(vocab_.size()))
    throw Error("the vocabulary has " + std::to_string(vocab_.size()) +
                " tokens but the network predicts " + std::to_string(scored) +
                "; set the last Dense layer's units (and the Embedding's vocab_size) to " +
                std::to_string(vocab_.size()));
  for (size_t i = 1; i < vocab_.size(); ++i) index_[vocab_[i]] = int32_t(i);
}

std::vector<int32_t> TextGenerator::encode(const std::string& prompt,
                                           const std::string& what) const {
  std::vector<int32_t> ids;
  for (const std::string& c : utf8_chars(prompt, what)) {
    auto it = index_.find(c);
    if (it == index_.end()) {
      const std::string shown = c == "\n" ? "\\n" : c == "\t" ? "\\t" : c;
      throw DataError(what + ": the character '" + shown +
                      "' never occurs in the training text, so the model has no token for it; "
                      "use characters from the corpus");
    }
    ids.push_back(it->second);
  }
  return ids;
}

std::string TextGenerator::generate(const std::string& prompt, const GenerateOptions& o,
                                    const std::function<bool()>& cancelled,
                                    const std::string& what) {
  std::vector<int32_t> ids = encode(prompt, what);
  Rng rng(o.seed);
  const double temperature = std::max(o.temperature, 1e-3);
  const size_t V = vocab_.size();
  std::string out = prompt;
  Tensor x(plan_.input_shape().with_batch(1));
  RunContext ctx{false, nullptr};
  std::vector<double> prob(V);
  std::vector<int> order(V);
  for (int64_t step = 0; step < o.length; ++step) {
    if (cancelled && cancelled()) break;
    // The window the model was trained on: the last T tokens, padded with
    // token 0 at the front as at the start of the corpus.
    for (int64_t k = 0; k < window_; ++k) {
      const int64_t src = int64_t(ids.size()) - window_ + k;
      x.f32()[k] = src < 0 ? 0.f : float(ids[size_t(src)]);
    }
    const float* logits = plan_.forward(x, ctx).f32() + last_;
    // Token 0 is padding, never a character to emit.
    double mx = -1e300;
    for (size_t i = 1; i < V; ++i) mx = std::max(mx, double(logits[i]));
    for (size_t i = 0; i < V; ++i) order[i] = int(i);
    prob[0] = 0;
    for (size_t i = 1; i < V; ++i) prob[i] = std::exp((double(logits[i]) - mx) / temperature);
    std::sort(order.begin(), order.end(), [&](int l, int r) { return prob[l] > prob[r]; });
    const size_t keep = o.top_k > 0 ? std::min<size_t>(size_t(o.top_k), V) : V;
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
    out += vocab_[size_t(pick)];
  }
  return out;
}

}  // namespace dc
