#pragma once
// Which loss a run trains with: a training setting (train_config.h), kept
// apart from the losses themselves (loss.h, in the train library) so that
// the settings sit below the training machinery.
#include <deepcanvas/enum_names.h>

namespace dc {

enum class LossType { SoftmaxCrossEntropy, BinaryCrossEntropy, Mse };
template <>
struct EnumNames<LossType> {
  static constexpr std::array<std::pair<LossType, const char*>, 3> table{{
      {LossType::SoftmaxCrossEntropy, "softmax_cross_entropy"},
      {LossType::BinaryCrossEntropy, "binary_cross_entropy"},
      {LossType::Mse, "mse"},
  }};
};

}  // namespace dc
