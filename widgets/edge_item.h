#pragma once
// A connection on the canvas, labelled with the tensor shape that flows
// through it ("64×14×14"). It holds the engine Edge (node ids and port) and
// the two NodeItems it joins; its path follows them as they move.
#include <deepcanvas/graph.h>

#include <QGraphicsItem>
#include <QPainterPath>
#include <QString>

namespace dc::widgets {

class NodeItem;

class EdgeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  EdgeItem(Edge e, NodeItem* src, NodeItem* dst);
  int type() const override { return Type; }
  const Edge& edge() const { return edge_; }
  NodeItem* source() const { return src_; }
  NodeItem* target() const { return dst_; }

  void updatePath();
  // Empty when the producing node has no valid shape.
  void setLabel(const QString& label);
  const QString& label() const { return label_; }

  // The curve from a to b, shared with the scene's rubber connection.
  static QPainterPath curve(QPointF a, QPointF b);

  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* opt, QWidget* w) override;

 private:
  QRectF labelRect(double scale = 1) const;

  Edge edge_;
  NodeItem* src_;
  NodeItem* dst_;
  QPainterPath path_;
  QString label_;
  QRectF bounds_;
};

}  // namespace dc::widgets
