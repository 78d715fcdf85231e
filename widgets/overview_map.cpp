#include "widgets/overview_map.h"

#include "widgets/layer_style.h"
#include "widgets/node_view.h"

#include <QEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <algorithm>

namespace dc::widgets {

namespace {
constexpr int kMargin = 12;
}

OverviewMap::OverviewMap(NodeView* main) : QGraphicsView(main->scene(), main), main_(main) {
  setObjectName("overview");
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setInteractive(false);
  setRenderHint(QPainter::Antialiasing);
  setFrameShape(QFrame::StyledPanel);
  setFocusPolicy(Qt::NoFocus);
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Overview: click or drag to move the canvas"));
  // Repaints come from the timer only, not from every scene change.
  setViewportUpdateMode(NoViewportUpdate);
  timer_ = new QTimer(this);
  timer_->setSingleShot(true);
  timer_->setInterval(100);
  connect(timer_, &QTimer::timeout, this, [this] {
    refit();
    viewport()->update();
  });
  connect(scene(), &QGraphicsScene::changed, this, &OverviewMap::scheduleUpdate);
  connect(main_->horizontalScrollBar(), &QScrollBar::valueChanged, this,
          &OverviewMap::scheduleUpdate);
  connect(main_->verticalScrollBar(), &QScrollBar::valueChanged, this,
          &OverviewMap::scheduleUpdate);
  connect(main_, &NodeView::zoomChanged, this, &OverviewMap::scheduleUpdate);
  main_->viewport()->installEventFilter(this);
  place();
  refit();
}

void OverviewMap::scheduleUpdate() {
  if (!timer_->isActive()) timer_->start();
}

void OverviewMap::place() {
  QWidget* vp = main_->viewport();
  // A fixed size covered a good part of a small canvas and was a thumbnail
  // on a large one: a fifth of the canvas' width, within limits.
  const int w = std::clamp(vp->width() / 5, 120, 300);
  const int h = std::clamp(std::min(w * 3 / 5, vp->height() / 3), 70, 180);
  setFixedSize(w, h);
  // A child of the view, placed over its viewport's corner.
  QPoint corner = vp->geometry().bottomRight();
  move(corner.x() - w - kMargin + 1, corner.y() - h - kMargin + 1);
  raise();
}

void OverviewMap::refit() {
  QRectF r = scene()->itemsBoundingRect();
  // When the canvas shows the whole network the map adds nothing and would
  // only cover part of it (right after Fit to Window, its last layers).
  const QRectF shown = main_->mapToScene(main_->viewport()->rect()).boundingRect();
  const bool show = !r.isEmpty() && isEnabled() && !shown.contains(r);
  setVisible(show);
  if (!show) return;
  r.adjust(-60, -60, 60, 60);
  fitInView(r, Qt::KeepAspectRatio);
}

bool OverviewMap::eventFilter(QObject* o, QEvent* e) {
  if (e->type() == QEvent::Resize) {
    place();
    scheduleUpdate();
  }
  return QGraphicsView::eventFilter(o, e);
}

void OverviewMap::changeEvent(QEvent* e) {
  if (e->type() == QEvent::EnabledChange) refit();
  QGraphicsView::changeEvent(e);
}

void OverviewMap::drawBackground(QPainter* p, const QRectF& rect) {
  const QPalette pal = main_->palette();
  p->fillRect(rect, mix(pal.color(QPalette::Window), pal.color(QPalette::Base), 0.7));
}

void OverviewMap::drawForeground(QPainter* p, const QRectF& /*rect*/) {
  QRectF visible = main_->mapToScene(main_->viewport()->rect()).boundingRect();
  QColor hl = main_->palette().color(QPalette::Highlight);
  QPen pen(hl, 1.5);
  pen.setCosmetic(true);
  p->setPen(pen);
  hl.setAlphaF(0.12f);
  p->setBrush(hl);
  p->drawRect(visible);
}

void OverviewMap::mousePressEvent(QMouseEvent* e) {
  main_->centerOn(mapToScene(e->position().toPoint()));
  e->accept();
}

void OverviewMap::mouseMoveEvent(QMouseEvent* e) {
  if (e->buttons() & Qt::LeftButton) main_->centerOn(mapToScene(e->position().toPoint()));
  e->accept();
}

void OverviewMap::wheelEvent(QWheelEvent* e) {
  e->accept();
}

}  // namespace dc::widgets
