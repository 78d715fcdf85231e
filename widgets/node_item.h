#pragma once
// A layer on the canvas. It holds only the node's id and reads everything it
// shows (name, type, output shape, error) from the model through refresh(),
// so the scene never keeps a second copy of the graph.
#include <deepcanvas/graph.h>

#include <QColor>
#include <QGraphicsItem>
#include <QList>
#include <QString>

namespace dc::widgets {

class GraphModel;
class EdgeItem;

class NodeItem : public QGraphicsItem {
 public:
  static constexpr double kWidth = 124;
  static constexpr double kPortRadius = 5.5;
  static constexpr double kPortPitch = 22;
  enum { Type = UserType + 1 };

  NodeItem(const GraphModel* model, NodeId id);
  int type() const override { return Type; }
  NodeId nodeId() const { return id_; }

  // Re-reads the node from the model. Returns true when anything visible
  // changed (so callers can skip untouched items).
  bool refresh();
  bool hasError() const { return !error_.isEmpty(); }
  // Node::trainable is false: drawn greyed with a lock.
  bool isFrozen() const { return frozen_; }
  int numInputs() const { return inputs_; }

  // The cost overlay (cost_overlay.h): a tint, a short label on the card
  // ("23 %") and the figures appended to the tooltip. Cleared: none.
  void setCost(const QColor& tint, const QString& label, const QString& tip);
  void clearCost();
  const QColor& costColor() const { return cost_tint_; }
  const QString& costLabel() const { return cost_label_; }

  // Port geometry, in scene coordinates.
  QPointF inputPortPos(int port) const;
  QPointF outputPortPos() const;
  // Which port lies under a scene point: {-1, false} for none; second is
  // true for the output port.
  std::pair<int, bool> portAt(QPointF scene_pos) const;

  // Highlight a port while a connection is dragged over it.
  void setHoverPort(int port, bool output, bool ok);
  void clearHoverPort();

  QList<EdgeItem*>& edges() { return edges_; }
  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* opt, QWidget* w) override;

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;
  void hoverEnterEvent(QGraphicsSceneHoverEvent* e) override;
  void hoverLeaveEvent(QGraphicsSceneHoverEvent* e) override;

 private:
  double height() const;
  QPointF localInput(int port) const;
  QPointF localOutput() const;

  const GraphModel* model_;
  NodeId id_;
  QString name_, type_, category_, detail_, error_;
  int inputs_ = 0;
  bool has_output_ = true;
  bool block_ = false;  // a Block node: drawn as a stack of cards
  QString block_line_;  // a Block's second line: "8-layer block"
  bool frozen_ = false;
  bool hovered_ = false;
  int hover_port_ = -1;
  bool hover_output_ = false, hover_ok_ = false;
  QList<EdgeItem*> edges_;
  QString tip_;  // without the cost figures
  QColor cost_tint_;
  QString cost_label_, cost_tip_;
};

}  // namespace dc::widgets
