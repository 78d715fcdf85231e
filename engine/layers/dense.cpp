#include "builtin.h"

namespace dc {

// Placeholder until this family's layers land.
void register_dense_layers(LayerRegistry&) {}

}  // namespace dc
