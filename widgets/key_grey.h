#pragma once
// The grey of plot keys and secondary figures: between the palette's text
// and base colours, so it reads on the light and the dark theme alike.
#include <QColor>
#include <QPalette>

namespace dc::widgets {

inline QColor keyGrey(const QPalette& p) {
  const QColor t = p.color(QPalette::Text), b = p.color(QPalette::Base);
  return QColor((t.red() * 3 + b.red() * 2) / 5, (t.green() * 3 + b.green() * 2) / 5,
                (t.blue() * 3 + b.blue() * 2) / 5);
}

}  // namespace dc::widgets
