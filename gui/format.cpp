#include "gui/format.h"

#include <deepcanvas/format.h>

namespace dc::gui {

QString humanCount(double n) {
  return QString::fromStdString(human_count(n));
}

QString humanBytes(double b) {
  return QString::fromStdString(human_bytes(b));
}

}  // namespace dc::gui
