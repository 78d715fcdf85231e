#pragma once
// Typed engine errors. Every message is meant to be shown to a user as is, so
// it names the node, file or field involved and says what would fix it.
#include <stdexcept>
#include <string>

namespace dc {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A graph that cannot be built or run: unknown layer, bad attribute, cycle,
// unconnected input, shape mismatch.
class GraphError : public Error {
 public:
  using Error::Error;
};

// A shape rule failed; thrown by LayerDescriptor::infer, caught by
// Graph::infer_shapes which prefixes the node's type and name.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A file that cannot be read or written: project, dataset, checkpoint.
class IoError : public Error {
 public:
  using Error::Error;
};

// A dataset that does not fit the model (label range, sample shape).
class DataError : public Error {
 public:
  using Error::Error;
};

// An accelerator that is missing or failed: no driver, no device, plugin
// not found, out of device memory, or a CUDA/cuDNN/cuBLAS error (the message
// names the layer and shapes).
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace dc
