// The network's entry point. It owns no kernels: the plan hands the batch to
// the Input's consumers directly, so all this layer contributes is the
// per-sample shape that the shape rules start from.
#include <deepcanvas/errors.h>

#include <string>
#include <vector>

#include "builtin.h"

namespace dc {
namespace {

class Input : public Layer {
 public:
  // Only reached if a caller runs the layer by hand; copying keeps that
  // harmless instead of leaving the output uninitialised.
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    if (!in.empty() && in[0]) out.copy_from(*in[0]);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor&,
                const std::vector<Tensor*>&, RunContext&) override {}
};

const LayerDescriptor& input_desc() {
  return LayerRegistry::instance().get("Input");
}

Shape input_shape(const std::vector<Shape>& in, const Attrs& attrs) {
  if (!in.empty()) throw ShapeError("takes no inputs; it is where the data enters the network");
  const std::vector<int64_t> dims = input_desc().with_defaults(attrs).ints("shape");
  Shape s(dims);
  if (dims.empty() || dims.size() > 4)
    throw ShapeError(
        "shape must have 1 to 4 dimensions (e.g. 1×28×28 for images, 784 for "
        "vectors) but has " +
        std::to_string(dims.size()));
  for (int64_t d : dims)
    if (d < 1)
      throw ShapeError("every dimension of shape must be at least 1, but shape is " + s.str());
  return s;
}

}  // namespace

void register_input_layers(LayerRegistry& r) {
  LayerDescriptor d;
  d.type = "Input";
  d.category = "Input";
  d.help = "Where samples enter the network; its shape is one sample's shape";
  d.attrs = {
      {"shape",
       AttrType::IntList,
       std::vector<int64_t>{1, 28, 28},
       1,
       1000000,
       {},
       "Shape of one sample, without the batch: channels×height×width for images (e.g. "
       "1×28×28), or features for vectors (e.g. 784)"},
  };
  d.num_inputs = [](const Attrs&) { return 0; };
  d.infer = input_shape;
  d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
  d.create = [](const Attrs&, const std::vector<Shape>&, const Shape&) {
    return std::unique_ptr<Layer>(new Input());
  };
  r.add(std::move(d));
}

}  // namespace dc
