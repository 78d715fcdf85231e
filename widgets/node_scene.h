#pragma once
// The canvas: a view of a GraphModel. It creates, updates and deletes items
// in response to the model's fine-grained signals (never a full rebuild on an
// edit), and turns gestures into requests (connect, move) that the editor
// turns into undo commands. Connections are checked while they are dragged;
// the reason a port refuses one goes to statusMessage.
#include <deepcanvas/graph.h>

#include <QGraphicsScene>
#include <QPointF>
#include <QString>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

class QGraphicsPathItem;

namespace dc::widgets {

class GraphModel;
class NodeItem;
class EdgeItem;

class NodeScene : public QGraphicsScene {
  Q_OBJECT
 public:
  static constexpr double kGrid = 20;

  explicit NodeScene(GraphModel* model, QObject* parent = nullptr);
  ~NodeScene() override;
  GraphModel* model() const { return model_; }

  // A read-only scene (template previews): no moves, no connections.
  void setReadOnly(bool ro);
  bool readOnly() const { return read_only_; }
  void setSnapToGrid(bool on) { snap_ = on; }
  bool snapToGrid() const { return snap_; }

  NodeItem* nodeItem(NodeId id) const;
  EdgeItem* edgeItem(const Edge& e) const;
  std::vector<NodeId> selectedNodes() const;
  std::vector<Edge> selectedEdges() const;
  void selectNodes(const std::vector<NodeId>& ids);
  // Grows the scene rectangle so there is always room to pan past `r`.
  void ensureRoom(const QRectF& r);
  // Text appended to the labels of the edges leaving a node (the cost
  // overlay's tensor bytes); empty: the shape alone.
  void setEdgeSuffixes(std::map<NodeId, QString> by_source);

 signals:
  void connectRequested(dc::NodeId src, dc::NodeId dst, int port);
  void moveRequested(const std::map<dc::NodeId, QPointF>& from,
                     const std::map<dc::NodeId, QPointF>& to);
  void statusMessage(const QString& text);
  // A node was double-clicked (a Block node opens).
  void nodeDoubleClicked(dc::NodeId id);

 protected:
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* e) override;
  void mousePressEvent(QGraphicsSceneMouseEvent* e) override;
  void mouseMoveEvent(QGraphicsSceneMouseEvent* e) override;
  void mouseReleaseEvent(QGraphicsSceneMouseEvent* e) override;
  bool event(QEvent* e) override;

 private:
  void rebuild();
  void addNodeItem(NodeId id);
  void removeNodeItem(NodeId id);
  void addEdgeItem(const Edge& e);
  void removeEdgeItem(const Edge& e);
  void refreshShapes();
  void updateEdgeLabel(EdgeItem* e);
  NodeItem* nodeAt(QPointF pos) const;
  void endConnectionDrag();

  struct EdgeKey {
    NodeId src, dst;
    int port;
    bool operator<(const EdgeKey& o) const {
      return std::tie(src, dst, port) < std::tie(o.src, o.dst, o.port);
    }
  };

  GraphModel* model_;
  std::unordered_map<NodeId, NodeItem*> nodes_;
  std::map<EdgeKey, EdgeItem*> edges_;
  std::map<NodeId, QString> edge_suffixes_;
  bool read_only_ = false;
  bool snap_ = true;

  // A connection being dragged from a port.
  struct Drag {
    NodeItem* from = nullptr;
    bool from_output = true;
    int from_port = 0;
    QGraphicsPathItem* rubber = nullptr;
    NodeItem* hover = nullptr;
    int hover_port = -1;
    std::string problem;
  } drag_;
  std::map<NodeId, QPointF> press_positions_;
};

}  // namespace dc::widgets
