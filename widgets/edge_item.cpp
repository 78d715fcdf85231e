#include "widgets/edge_item.h"

#include "widgets/layer_style.h"
#include "widgets/node_item.h"

#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QPainter>
#include <QPainterPathStroker>
#include <QPalette>
#include <algorithm>
#include <cmath>

namespace dc::widgets {

namespace {
QFont labelFont(double scale) {
  QFont f;
  f.setPixelSize(int(std::lround(10 * scale)));
  return f;
}
}  // namespace

EdgeItem::EdgeItem(Edge e, NodeItem* src, NodeItem* dst) : edge_(e), src_(src), dst_(dst) {
  setFlags(ItemIsSelectable);
  setZValue(0);
  updatePath();
}

QPainterPath EdgeItem::curve(QPointF a, QPointF b) {
  QPainterPath path(a);
  // Horizontal tangents at both ports; a backwards edge loops out wider so
  // it does not run under the nodes it joins.
  double dx = std::max(40.0, std::abs(b.x() - a.x()) * 0.5);
  if (b.x() < a.x()) dx = std::max(dx, 80.0);
  // A long edge along a row of nodes (a residual skip) would run hidden
  // under the nodes between its ends; it bows below the row instead.
  double bow = 0;
  if (std::abs(b.y() - a.y()) < 40 && std::abs(b.x() - a.x()) > 260)
    bow = std::min(160.0, 40 + std::abs(b.x() - a.x()) * 0.08);
  path.cubicTo(a + QPointF(dx * 0.5, bow * 1.33), b - QPointF(dx * 0.5, -bow * 1.33), b);
  if (bow == 0) {
    path = QPainterPath(a);
    path.cubicTo(a + QPointF(dx, 0), b - QPointF(dx, 0), b);
  }
  return path;
}

void EdgeItem::updatePath() {
  prepareGeometryChange();
  path_ = curve(src_->outputPortPos(), dst_->inputPortPos(edge_.dst_port));
  bounds_ = path_.boundingRect().adjusted(-4, -4, 4, 4).united(labelRect(1).adjusted(-2, -2, 2, 2));
}

void EdgeItem::setLabel(const QString& label) {
  if (label == label_) return;
  prepareGeometryChange();
  label_ = label;
  setToolTip(label_.isEmpty() ? QObject::tr("No valid tensor flows here yet")
                              : QObject::tr("Tensor per sample: %1").arg(label_));
  bounds_ = path_.boundingRect().adjusted(-4, -4, 4, 4).united(labelRect(1).adjusted(-2, -2, 2, 2));
  update();
}

QRectF EdgeItem::labelRect(double scale) const {
  if (label_.isEmpty()) return {};
  QFontMetricsF fm(labelFont(scale));
  double w = fm.horizontalAdvance(label_) + 8 * scale, h = fm.height() + 3 * scale;
  // Just above the curve's midpoint, so the line and both ports stay
  // visible even where nodes are close together.
  QPointF c = path_.pointAtPercent(0.5);
  return QRectF(c.x() - w / 2, c.y() - h - 5, w, h);
}

QRectF EdgeItem::boundingRect() const {
  return bounds_;
}

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker s;
  s.setWidth(10);
  QPainterPath p = s.createStroke(path_);
  if (!label_.isEmpty()) p.addRect(labelRect());
  return p;
}

void EdgeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* /*opt*/, QWidget* /*w*/) {
  const QPalette pal = scene() ? scene()->palette() : QPalette();
  p->setRenderHint(QPainter::Antialiasing);
  QColor c = mix(pal.color(QPalette::Text), pal.color(QPalette::Base), 0.45);
  if (isSelected()) c = pal.color(QPalette::Highlight);
  QPen pen(c, isSelected() ? 2.6 : 1.8);
  if (label_.isEmpty()) pen.setStyle(Qt::DashLine);  // no valid tensor flows here
  p->setPen(pen);
  p->setBrush(Qt::NoBrush);
  p->drawPath(path_);
  if (label_.isEmpty()) return;
  // One size for every label, the cards' scale: labels grown on long edges
  // only (to stay readable zoomed out) made two sizes side by side and
  // overlapped on a real network (issue 36).
  const double scale = 1.0;
  QRectF r = labelRect(scale);
  p->setPen(QPen(mix(c, pal.color(QPalette::Base), 0.3), 1));
  p->setBrush(pal.color(QPalette::Base));
  p->drawRoundedRect(r, r.height() / 2, r.height() / 2);
  p->setFont(labelFont(scale));
  p->setPen(isSelected() ? pal.color(QPalette::Highlight) : pal.color(QPalette::Text));
  p->drawText(r, Qt::AlignCenter, label_);
}

}  // namespace dc::widgets
