#pragma once
// Networks that score every step of a token window. Their output is [T, V]
// for windows of T tokens and a vocabulary of V: such a network is trained
// as a language model (GPT-style). Step t predicts the token that follows
// it in the text, which is the window's own input at t + 1, or the window's
// label at the last step, so each window gives T targets instead of one:
// that is what a causal mask is for. It is evaluated, and generates text,
// at the last step only, so that its losses and accuracy compare directly
// with a model that predicts one token per window (char_lstm).
#include <deepcanvas/data.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/metrics.h>
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <vector>

namespace dc {

// Whether a network with per-sample input `input` and output `output`
// scores every step of token windows: input [T] of token ids, output [T, V].
bool scores_every_step(const Shape& input, const Shape& output, bool tokens);
// The same for d's samples.
bool scores_every_step(const Dataset& d, const Shape& output);
// The number of classes a network's per-sample output scores: V for a
// network that scores every step, else all of its values.
int64_t scored_classes(const Shape& input, const Shape& output, bool tokens);

// The next-token targets of n windows x [n, T] (token ids) whose next
// tokens are `labels`: n*T entries, -1 where the target is padding (token
// 0, before the start of the text), which the loss leaves out.
void next_token_targets(const Tensor& x, const int32_t* labels, int64_t n,
                        std::vector<int32_t>& targets);

// Scores batches of a network's output. For an ordinary network it is the
// loss over [N, C] and the metrics on it. For one that scores every step,
// training optimises the loss over every step, while the figures shown
// (the returned loss, the metrics) are those at the last step, as
// evaluation reports them.
class BatchScorer {
 public:
  BatchScorer(Loss& loss, bool every_step) : loss_(loss), every_step_(every_step) {}
  // Training: writes d(loss)/d(out) into dout (out's shape) and returns the
  // loss being optimised; *shown (may be null) gets the loss to report and
  // m (may be null) the metrics.
  float train(const Tensor& out, const Tensor& x, const int32_t* labels, Tensor& dout,
              ClassificationMetrics* m, float* shown);
  // Evaluation: the loss to report, metrics added to m (may be null); dout
  // is scratch of out's shape.
  float eval(const Tensor& out, const int32_t* labels, Tensor& dout, ClassificationMetrics* m);

 private:
  // The loss at out's last step, and its metrics added to m (may be null).
  float at_last_step(const Tensor& out, const int32_t* labels, ClassificationMetrics* m);
  Loss& loss_;
  bool every_step_;
  std::vector<int32_t> targets_;
  Tensor last_, dlast_;
};

}  // namespace dc
