#pragma once
// Looking inside a trained network, for the inference panel and the
// evaluation view: per-sample predictions over a dataset (to list the
// misclassified samples of a confusion-matrix cell), and a ModelProbe that
// keeps every activation of one forward pass and computes the gradient of a
// class score with respect to the input (a saliency map, Simonyan et al.
// 2013). Plan::backward stops at the first layer with parameters and never
// writes an input gradient (training does not need one), so the probe keeps
// its own layers, built from the same lowered steps as the Plan
// (lower_graph in plan.h).
#include <deepcanvas/data.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dc {

struct SamplePrediction {
  int64_t index = 0;      // into the dataset
  int32_t label = 0;      // true class
  int32_t predicted = 0;  // top-1 class
  float confidence = 0;   // softmax probability of `predicted`
  float label_prob = 0;   // softmax probability of the true class
};

// Runs plan in inference mode over indices of ds (all when empty), in
// batches of at most plan.max_batch(). The dataset's mean/stddev must be the
// ones the weights were trained with.
std::vector<SamplePrediction> predict_samples(Plan& plan, const Dataset& ds,
                                              const std::vector<int64_t>& indices = {});

// Softmax of n scores (numerically stable).
std::vector<float> softmax(const float* scores, int n);

class ModelProbe {
 public:
  // Builds the graph's layers for one sample at a time and copies the
  // weights in by name (as Plan::load_state; throws IoError naming a missing
  // or mismatched tensor, GraphError for an invalid graph).
  ModelProbe(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& state,
             const std::string& source = "weights");
  ~ModelProbe();
  ModelProbe(const ModelProbe&) = delete;
  ModelProbe& operator=(const ModelProbe&) = delete;

  const Shape& input_shape() const { return input_shape_; }
  const Shape& output_shape() const { return output_shape_; }

  // x is [1, ...input_shape]. Returns the output scores [1, ...output] and
  // keeps every layer's activation until the next call (inference mode:
  // dropout off, BatchNorm on its running statistics).
  const Tensor& forward(const Tensor& x);
  // d output[cls] / d input for the last forward, shaped like its input.
  Tensor input_gradient(int cls);

  struct LayerOutput {
    NodeId id;
    std::string name, type;
    const Tensor* value;  // [1, ...shape]
  };
  // Every layer's output from the last forward, in execution order.
  std::vector<LayerOutput> activations() const;

 private:
  struct Step;
  std::vector<std::unique_ptr<Step>> steps_;
  Shape input_shape_, output_shape_;
};

}  // namespace dc
