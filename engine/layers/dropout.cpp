#include "builtin.h"

namespace dc {

// Placeholder until this family's layers land.
void register_dropout_layers(LayerRegistry&) {}

}  // namespace dc
