#pragma once
// A small overview of the whole graph in a corner of the canvas, with the
// part the canvas shows outlined; clicking or dragging in it moves the
// canvas there. It repaints at most ~10 times a second, so it adds little
// to the cost of dragging nodes in a large graph. It scales with the canvas
// and hides while the canvas shows the whole network.
#include <QGraphicsView>

class QTimer;

namespace dc::widgets {

class NodeView;

class OverviewMap : public QGraphicsView {
  Q_OBJECT
 public:
  explicit OverviewMap(NodeView* main);

  // Keeps it in the bottom-right corner of the canvas, sized to it.
  void place();
  // Shows it, fitted to the network, where the canvas does not show the
  // whole network; hides it otherwise or when disabled. Runs at most ~10
  // times a second on its own; tests call it to skip the wait.
  void refit();

 protected:
  void drawForeground(QPainter* p, const QRectF& rect) override;
  void drawBackground(QPainter* p, const QRectF& rect) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  bool eventFilter(QObject* o, QEvent* e) override;
  void changeEvent(QEvent* e) override;

 private:
  void scheduleUpdate();
  NodeView* main_;
  QTimer* timer_;
};

}  // namespace dc::widgets
