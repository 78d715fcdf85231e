#include "gui/tool_icons.h"

#include <QPainter>
#include <QPainterPath>
#include <QPixmap>

namespace dc::gui {

namespace {

// Draws on a 24×24 design grid; the painter is scaled to the pixmap size.
void draw(QPainter& p, const QString& n, const QColor& accent) {
  auto line = [&](double x1, double y1, double x2, double y2) {
    p.drawLine(QPointF(x1, y1), QPointF(x2, y2));
  };
  if (n == "new" || n == "template") {
    QPainterPath page;
    page.moveTo(6, 3);
    page.lineTo(14, 3);
    page.lineTo(19, 8);
    page.lineTo(19, 21);
    page.lineTo(6, 21);
    page.closeSubpath();
    p.drawPath(page);
    line(14, 3, 14, 8);
    line(14, 8, 19, 8);
    if (n == "template") {
      p.setPen(QPen(accent, 1.8, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
      p.drawRect(QRectF(9, 11, 3, 3));
      p.drawRect(QRectF(9, 16, 3, 3));
      line(12, 12.5, 16, 12.5);
      line(12, 17.5, 16, 17.5);
    }
  } else if (n == "open") {
    QPainterPath f;
    f.moveTo(3, 6);
    f.lineTo(9, 6);
    f.lineTo(11, 8);
    f.lineTo(20, 8);
    f.lineTo(20, 19);
    f.lineTo(3, 19);
    f.closeSubpath();
    p.drawPath(f);
    line(3, 11, 20, 11);
  } else if (n == "save") {
    p.drawRoundedRect(QRectF(4, 4, 16, 16), 2, 2);
    p.drawRect(QRectF(8, 4, 8, 5));
    p.drawRect(QRectF(7, 13, 10, 7));
  } else if (n == "undo" || n == "redo") {
    p.save();
    if (n == "redo") {
      p.translate(24, 0);
      p.scale(-1, 1);
    }
    QPainterPath a;
    a.moveTo(8, 9);
    a.lineTo(15, 9);
    a.cubicTo(22, 9, 22, 19, 15, 19);
    a.lineTo(9, 19);
    p.drawPath(a);
    line(8, 9, 11.5, 5.5);
    line(8, 9, 11.5, 12.5);
    p.restore();
  } else if (n == "cut") {
    p.drawEllipse(QPointF(7, 17), 3, 3);
    p.drawEllipse(QPointF(17, 17), 3, 3);
    line(9, 15, 17, 4);
    line(15, 15, 7, 4);
  } else if (n == "copy") {
    p.drawRoundedRect(QRectF(8, 8, 12, 12), 2, 2);
    QPainterPath b;
    b.moveTo(5, 16);
    b.lineTo(4, 16);
    b.lineTo(4, 4);
    b.lineTo(16, 4);
    b.lineTo(16, 5);
    p.drawPath(b);
  } else if (n == "paste") {
    p.drawRoundedRect(QRectF(5, 5, 14, 16), 2, 2);
    p.drawRoundedRect(QRectF(9, 3, 6, 4), 1, 1);
    line(9, 12, 15, 12);
    line(9, 16, 13, 16);
  } else if (n == "delete") {
    line(4, 6, 20, 6);
    line(10, 6, 10, 3.5);
    line(10, 3.5, 14, 3.5);
    line(14, 3.5, 14, 6);
    QPainterPath c;
    c.moveTo(6, 6);
    c.lineTo(7, 20);
    c.lineTo(17, 20);
    c.lineTo(18, 6);
    p.drawPath(c);
    line(10, 10, 10, 16);
    line(14, 10, 14, 16);
  } else if (n == "zoom-in" || n == "zoom-out") {
    p.drawEllipse(QPointF(10, 10), 6, 6);
    line(14.5, 14.5, 20, 20);
    line(7, 10, 13, 10);
    if (n == "zoom-in") line(10, 7, 10, 13);
  } else if (n == "fit") {
    line(4, 9, 4, 4);
    line(4, 4, 9, 4);
    line(15, 4, 20, 4);
    line(20, 4, 20, 9);
    line(20, 15, 20, 20);
    line(20, 20, 15, 20);
    line(9, 20, 4, 20);
    line(4, 20, 4, 15);
    p.drawRoundedRect(QRectF(8, 9, 8, 6), 1.5, 1.5);
  } else if (n == "layout") {
    p.drawRoundedRect(QRectF(2.5, 9, 6, 6), 1.5, 1.5);
    p.drawRoundedRect(QRectF(15.5, 3.5, 6, 6), 1.5, 1.5);
    p.drawRoundedRect(QRectF(15.5, 14.5, 6, 6), 1.5, 1.5);
    p.setPen(QPen(accent, 1.8, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    QPainterPath a, b;
    a.moveTo(8.5, 12);
    a.cubicTo(12, 12, 12, 6.5, 15.5, 6.5);
    b.moveTo(8.5, 12);
    b.cubicTo(12, 12, 12, 17.5, 15.5, 17.5);
    p.drawPath(a);
    p.drawPath(b);
  } else if (n == "cost") {
    // The cost overlay: three cards, the heaviest filled with the accent.
    p.drawRoundedRect(QRectF(3, 13, 5, 7), 1.2, 1.2);
    p.drawRoundedRect(QRectF(9.5, 9, 5, 11), 1.2, 1.2);
    p.setBrush(accent);
    p.drawRoundedRect(QRectF(16, 4, 5, 16), 1.2, 1.2);
    p.setBrush(Qt::NoBrush);
  }
}

}  // namespace

QIcon toolIcon(const QString& name, const QPalette& pal) {
  QIcon icon;
  const QColor accent = pal.color(QPalette::Highlight);
  for (QIcon::Mode mode : {QIcon::Normal, QIcon::Disabled}) {
    QColor c = pal.color(mode == QIcon::Normal ? QPalette::Active : QPalette::Disabled,
                         QPalette::WindowText);
    if (mode == QIcon::Disabled) c.setAlphaF(0.35f);
    for (int size : {16, 20, 24, 32, 40, 48}) {
      QPixmap pm(size, size);
      pm.fill(Qt::transparent);
      QPainter p(&pm);
      p.setRenderHint(QPainter::Antialiasing);
      p.scale(size / 24.0, size / 24.0);
      p.setPen(QPen(c, 1.8, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
      p.setBrush(Qt::NoBrush);
      draw(p, name, mode == QIcon::Normal ? accent : c);
      icon.addPixmap(pm, mode);
    }
  }
  return icon;
}

}  // namespace dc::gui
