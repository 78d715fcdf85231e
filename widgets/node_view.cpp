#include "widgets/node_view.h"

#include "widgets/layer_style.h"
#include "widgets/node_scene.h"
#include "widgets/overview_map.h"

#include <QDragEnterEvent>
#include <QGraphicsItem>
#include <QKeyEvent>
#include <QMimeData>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <QVector>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace dc::widgets {

namespace {
constexpr double kMinZoom = 0.05, kMaxZoom = 3.0;
// The empty canvas fitAll() leaves around the network, in scene units.
constexpr double kFitMargin = 40;
}  // namespace

NodeView::NodeView(QGraphicsScene* scene, QWidget* parent) : QGraphicsView(scene, parent) {
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(RubberBandDrag);
  setRubberBandSelectionMode(Qt::IntersectsItemShape);
  setTransformationAnchor(AnchorUnderMouse);
  setViewportUpdateMode(SmartViewportUpdate);
  setAcceptDrops(true);
  setFrameShape(QFrame::NoFrame);
  setFocusPolicy(Qt::StrongFocus);
}

double NodeView::zoom() const {
  return transform().m11();
}

void NodeView::scaleBy(double factor) {
  fit_pending_ = false;
  double z = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
  factor = z / zoom();
  scale(factor, factor);
  Q_EMIT zoomChanged(zoom());
}

void NodeView::zoomIn() {
  scaleAtCenter(1.25);
}
void NodeView::zoomOut() {
  scaleAtCenter(0.8);
}

void NodeView::scaleAtCenter(double factor) {
  // The keys and buttons zoom about the middle of the canvas; under the
  // mouse (the wheel's anchor) they zoomed about wherever the pointer was
  // left, and the network slid out of view.
  const ViewportAnchor anchor = transformationAnchor();
  setTransformationAnchor(AnchorViewCenter);
  scaleBy(factor);
  setTransformationAnchor(anchor);
}

void NodeView::resetZoom() {
  fit_pending_ = false;
  setTransform(QTransform());
  Q_EMIT zoomChanged(1.0);
}

void NodeView::fitAll() {
  QRectF r = scene()->itemsBoundingRect();
  if (r.isEmpty()) {
    resetZoom();
    centerOn(0, 0);
    return;
  }
  // The whole network, however small that makes it (a zoom floor left the
  // last layers of the sample off-screen); Auto-layout wraps a long chain
  // into rows so it can be shown larger. Small graphs are not blown up past
  // their natural size (fitZoom() clamps to [kMinZoom, 1]).
  const double z = fitZoom();
  setTransform(QTransform::fromScale(z, z));
  // Centred in what the inset leaves uncovered: the viewport's centre is
  // half the inset below that area's centre.
  centerOn(r.center() + QPointF(0, usableInset() / 2.0 / z));
  fit_pending_ = !isVisible();
  // A hidden view's viewport has no real size yet, so its fit is a guess
  // (5 % on another tab at start-up, shown in the status bar); the fit
  // made when it is shown says the zoom.
  if (!fit_pending_) Q_EMIT zoomChanged(zoom());
}

int NodeView::usableInset() const {
  // Never more than half the viewport: a legend taller than that on a tiny
  // canvas would leave nothing to fit into.
  return std::min(bottom_inset_, viewport()->height() / 2);
}

double NodeView::fitZoom() const {
  QRectF r = scene()->itemsBoundingRect();
  if (r.isEmpty()) return 1.0;
  r.adjust(-kFitMargin, -kFitMargin, kFitMargin, kFitMargin);
  // The viewport less a 2-pixel margin, as QGraphicsView::fitInView() has
  // it, and less what covers its bottom.
  const QRectF vp = QRectF(viewport()->rect()).adjusted(2, 2, -2, -2 - usableInset());
  const double z = std::min(vp.width() / r.width(), vp.height() / r.height());
  return std::clamp(z, kMinZoom, 1.0);
}

void NodeView::showAt(const QRectF& focus, double zoom) {
  fit_pending_ = false;
  const double z = std::clamp(zoom, kMinZoom, kMaxZoom);
  setTransform(QTransform::fromScale(z, z));
  QRectF net = scene()->itemsBoundingRect();
  net.adjust(-kFitMargin, -kFitMargin, kFitMargin, kFitMargin);
  const QSizeF shown = QSizeF(viewport()->size()) / z;
  auto axis = [](double want, double lo, double hi, double span) {
    return hi - lo <= span ? (lo + hi) / 2 : std::max(want, lo + span / 2);
  };
  centerOn(axis(focus.center().x(), net.left(), net.right(), shown.width()),
           axis(focus.center().y(), net.top(), net.bottom(), shown.height()));
  Q_EMIT zoomChanged(this->zoom());
}

void NodeView::showEvent(QShowEvent* e) {
  QGraphicsView::showEvent(e);
  // After the layout has given the viewport its size.
  if (fit_pending_)
    QTimer::singleShot(0, this, [this] {
      if (fit_pending_ && isVisible()) fitAll();
    });
}

void NodeView::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  if (fit_on_resize_) fitAll();
}

void NodeView::centerOnItem(QGraphicsItem* item) {
  if (item) centerOn(item->sceneBoundingRect().center());
}

void NodeView::reveal(QGraphicsItem* item) {
  if (!item) return;
  ensureVisible(item, 60, 60);
  const OverviewMap* map = findChild<OverviewMap*>(QString(), Qt::FindDirectChildrenOnly);
  if (!map || !map->isEnabled()) return;
  // The map shows only while part of the network is off the canvas (it
  // decides on a timer, so ask the same question here).
  const QRectF net = scene()->itemsBoundingRect();
  if (mapToScene(viewport()->rect()).boundingRect().contains(net)) return;
  const QRect at = mapFromScene(item->sceneBoundingRect()).boundingRect();
  const QRect corner = map->geometry().translated(-viewport()->pos()).adjusted(-10, -10, 0, 0);
  if (!at.intersects(corner)) return;
  // The shorter way out: left of the map, or above it.
  const int dx = at.right() + 1 - corner.left(), dy = at.bottom() + 1 - corner.top();
  if (dx <= dy)
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() + dx);
  else
    verticalScrollBar()->setValue(verticalScrollBar()->value() + dy);
}

void NodeView::wheelEvent(QWheelEvent* e) {
  // Plain wheel zooms (the canvas has no natural scroll direction); with
  // Shift it scrolls, as in most diagram tools.
  if (e->modifiers() & Qt::ShiftModifier) {
    QGraphicsView::wheelEvent(e);
    return;
  }
  double steps = e->angleDelta().y() / 120.0;
  if (steps != 0) scaleBy(std::pow(1.15, steps));
  e->accept();
}

void NodeView::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::MiddleButton || (space_ && e->button() == Qt::LeftButton)) {
    panning_ = true;
    last_ = e->pos();
    viewport()->setCursor(Qt::ClosedHandCursor);
    e->accept();
    return;
  }
  QGraphicsView::mousePressEvent(e);
}

void NodeView::mouseMoveEvent(QMouseEvent* e) {
  if (panning_) {
    QPoint d = e->pos() - last_;
    last_ = e->pos();
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() - d.x());
    verticalScrollBar()->setValue(verticalScrollBar()->value() - d.y());
    e->accept();
    return;
  }
  QGraphicsView::mouseMoveEvent(e);
}

void NodeView::mouseReleaseEvent(QMouseEvent* e) {
  if (panning_) {
    panning_ = false;
    viewport()->setCursor(space_ ? Qt::OpenHandCursor : Qt::ArrowCursor);
    e->accept();
    return;
  }
  QGraphicsView::mouseReleaseEvent(e);
}

void NodeView::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Space && !e->isAutoRepeat()) {
    space_ = true;
    viewport()->setCursor(Qt::OpenHandCursor);
    e->accept();
    return;
  }
  const double step = NodeScene::kGrid * (e->modifiers() & Qt::ShiftModifier ? 5 : 1);
  QPointF d;
  switch (e->key()) {
    case Qt::Key_Left:
      d = {-step, 0};
      break;
    case Qt::Key_Right:
      d = {step, 0};
      break;
    case Qt::Key_Up:
      d = {0, -step};
      break;
    case Qt::Key_Down:
      d = {0, step};
      break;
    default:
      break;
  }
  if (!d.isNull() && scene() && !scene()->selectedItems().isEmpty()) {
    Q_EMIT nudgeRequested(d);
    e->accept();
    return;
  }
  QGraphicsView::keyPressEvent(e);
}

void NodeView::keyReleaseEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Space && !e->isAutoRepeat()) {
    space_ = false;
    if (!panning_) viewport()->setCursor(Qt::ArrowCursor);
    e->accept();
    return;
  }
  QGraphicsView::keyReleaseEvent(e);
}

void NodeView::focusOutEvent(QFocusEvent* e) {
  space_ = false;
  viewport()->unsetCursor();
  QGraphicsView::focusOutEvent(e);
}

void NodeView::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasFormat(kLayerMimeType) && scene() &&
      !static_cast<NodeScene*>(scene())->readOnly())
    e->acceptProposedAction();
  else
    e->ignore();
}

void NodeView::dragMoveEvent(QDragMoveEvent* e) {
  if (e->mimeData()->hasFormat(kLayerMimeType))
    e->acceptProposedAction();
  else
    e->ignore();
}

void NodeView::dropEvent(QDropEvent* e) {
  if (!e->mimeData()->hasFormat(kLayerMimeType)) return;
  QString type = QString::fromUtf8(e->mimeData()->data(kLayerMimeType));
  Q_EMIT layerDropped(type, mapToScene(e->position().toPoint()));
  e->acceptProposedAction();
}

void NodeView::drawBackground(QPainter* p, const QRectF& rect) {
  const QPalette pal = palette();
  const QColor bg = pal.color(QPalette::Window);
  p->fillRect(rect, mix(bg, pal.color(QPalette::Base), 0.35));
  // A dot every grid step, every fifth a little stronger. The step grows
  // when zoomed out so dots stay at least ~10 screen pixels apart: a fixed
  // step would mean hundreds of thousands of dots on a zoomed-out view.
  const double z = zoom();
  double step = NodeScene::kGrid;
  while (step * z < 10) step *= 5;
  QColor dot = mix(bg, pal.color(QPalette::Text), 0.18);
  QColor major = mix(bg, pal.color(QPalette::Text), 0.3);
  const double left = std::floor(rect.left() / step) * step;
  const double top = std::floor(rect.top() / step) * step;
  QVector<QPointF> minor_pts, major_pts;
  for (double x = left; x < rect.right(); x += step)
    for (double y = top; y < rect.bottom(); y += step) {
      bool big = std::fmod(std::abs(x), step * 5) < 1e-6 && std::fmod(std::abs(y), step * 5) < 1e-6;
      (big ? major_pts : minor_pts).push_back(QPointF(x, y));
    }
  // Cosmetic, aliased pens: the same on-screen size at every zoom, and
  // cheap (antialiased points cost a path each).
  p->save();
  p->setRenderHint(QPainter::Antialiasing, false);
  QPen pen(dot, 2);
  pen.setCosmetic(true);
  p->setPen(pen);
  p->drawPoints(minor_pts.constData(), int(minor_pts.size()));
  pen.setColor(major);
  p->setPen(pen);
  p->drawPoints(major_pts.constData(), int(major_pts.size()));
  p->restore();
}

}  // namespace dc::widgets
