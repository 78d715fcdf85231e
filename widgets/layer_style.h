#pragma once
// How a layer looks wherever it appears (palette, canvas, summary): one
// accent colour per category and an icon drawn from it, so the app needs no
// image files and the icons stay consistent and crisp at any scale.
#include <QColor>
#include <QIcon>
#include <QRectF>
#include <QString>

class QPainter;

namespace dc::widgets {

QColor categoryColor(const QString& category);
// A rounded badge in the category's colour with a short glyph for the type.
QIcon layerIcon(const QString& type);
// The category of a layer type ("" when unknown).
QString layerCategory(const QString& type);
// "Conv2D" -> "Cv", "MaxPool2D" -> "Mx", ...: the glyph on the badge.
QString layerGlyph(const QString& type);
// Blends two colours; t = 0 gives a.
QColor mix(const QColor& a, const QColor& b, double t);
// The padlock that marks a frozen layer, painted (no font has to carry an
// emoji): a shackle arc over a filled body, filling `box`.
void drawLock(QPainter* p, const QRectF& box, const QColor& color);
QIcon lockIcon(const QColor& color);

}  // namespace dc::widgets
