#include "builtin.h"

namespace dc {

// Placeholder until this family's layers land.
void register_conv_layers(LayerRegistry&) {}

}  // namespace dc
