#include "gui/format.h"

namespace dc::gui {

QString humanCount(double n) {
  if (n >= 1e9) return QString::number(n / 1e9, 'f', 2) + "G";
  if (n >= 1e6) return QString::number(n / 1e6, 'f', 2) + "M";
  if (n >= 1e3) return QString::number(n / 1e3, 'f', 1) + "k";
  return QString::number(n, 'f', 0);
}

QString humanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return QString::number(b, 'f', u ? 1 : 0) + " " + units[u];
}

}  // namespace dc::gui
