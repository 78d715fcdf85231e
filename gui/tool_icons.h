#pragma once
// Toolbar and menu icons drawn with QPainter in the palette's text colour,
// so they match light and dark themes and stay sharp at 200 % scaling
// without an icon theme (which a bare desktop or Xvfb does not have).
#include <QIcon>
#include <QPalette>
#include <QString>

namespace dc::gui {

// name: new, open, save, undo, redo, cut, copy, paste, delete, zoom-in,
// zoom-out, fit, layout, template.
QIcon toolIcon(const QString& name, const QPalette& pal);

}  // namespace dc::gui
