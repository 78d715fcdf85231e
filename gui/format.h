#pragma once
// Numbers as the summary and status bar show them: "421.6k", "1.6 MiB".
#include <QString>
#include <cstdint>

namespace dc::gui {

QString humanCount(double n);
QString humanBytes(double bytes);

}  // namespace dc::gui
