#pragma once
// The canvas' viewport: wheel zoom around the cursor, pan with the middle
// button or space + drag, rubber-band selection, fit, a dotted grid, and
// drops from the layer palette.
#include <QGraphicsView>

namespace dc::widgets {

// The MIME type the palette uses for a dragged layer type.
inline constexpr const char* kLayerMimeType = "application/x-deepcanvas-layer";

class NodeView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit NodeView(QGraphicsScene* scene, QWidget* parent = nullptr);

  void zoomIn();
  void zoomOut();
  void resetZoom();
  void fitAll();
  // The zoom fitAll() would choose for the viewport's current size (the
  // view is left as it is).
  double fitZoom() const;
  // Zooms to `zoom` and centres on `focus` (scene coordinates), but never
  // further left or up than the network's top-left margin, so a focus at
  // the start of the network (its input) puts the network's start at the
  // edge rather than the middle of the canvas. Along an axis the network
  // fits at this zoom, it is centred instead.
  void showAt(const QRectF& focus, double zoom);
  void centerOnItem(QGraphicsItem* item);
  // Scrolls as little as needed to show the item with a margin, and clear
  // of the overview map in the corner when that is shown (a layer appended
  // at the right edge landed under it).
  void reveal(QGraphicsItem* item);
  double zoom() const;
  // Previews refit whenever their size changes.
  void setFitOnResize(bool on) { fit_on_resize_ = on; }
  // Pixels at the viewport's bottom that a widget over the canvas covers
  // (the cost overlay's legend): fitAll() fits the network above them.
  void setBottomInset(int px) { bottom_inset_ = px; }
  int bottomInset() const { return bottom_inset_; }

 signals:
  void layerDropped(const QString& type, QPointF scene_pos);
  void zoomChanged(double zoom);
  // Arrow keys: move the selection by one grid step (Shift: five).
  void nudgeRequested(QPointF delta);

 protected:
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void keyReleaseEvent(QKeyEvent* e) override;
  void focusOutEvent(QFocusEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dragMoveEvent(QDragMoveEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void drawBackground(QPainter* p, const QRectF& rect) override;
  void resizeEvent(QResizeEvent* e) override;
  void showEvent(QShowEvent* e) override;

 private:
  int usableInset() const;
  void scaleBy(double factor);
  void scaleAtCenter(double factor);
  bool fit_on_resize_ = false;
  int bottom_inset_ = 0;
  // fitAll() ran while the view was hidden (a restart on another tab), with
  // a viewport that has no real size yet: fit again when first shown, unless
  // the zoom was set deliberately since.
  bool fit_pending_ = false;
  bool space_ = false;
  bool panning_ = false;
  QPoint last_;
};

}  // namespace dc::widgets
