#pragma once
// The editor's model: it owns the engine Graph and announces each change with
// a fine-grained signal, so the scene can update only the items concerned
// instead of rebuilding itself. Shapes are re-inferred after each structural
// change (or once at the end of a batch), which is what keeps edge labels,
// red nodes and the problems list live. Only undo commands mutate it.
#include <deepcanvas/graph.h>

#include <QObject>
#include <QPointF>
#include <map>
#include <string>

namespace dc::widgets {

class GraphModel : public QObject {
  Q_OBJECT
 public:
  explicit GraphModel(QObject* parent = nullptr);

  const Graph& graph() const { return graph_; }
  const std::map<NodeId, NodeShape>& shapes() const { return shapes_; }
  // nullptr for an unknown id.
  const NodeShape* shape(NodeId id) const;
  // The id the next new node gets; ids are never reused while they are alive.
  NodeId nextId() const;

  // Mutations. Each throws dc::GraphError (from the engine) when illegal.
  void addNode(const Node& n);
  void removeNode(NodeId id);  // callers remove its edges first, for undo
  void connect(const Edge& e);
  void disconnect(const Edge& e);
  void moveNode(NodeId id, QPointF pos);
  void setAttr(NodeId id, const std::string& name, const AttrValue& v);
  void rename(NodeId id, const std::string& name);
  // Freezes or unfreezes a node (Node::trainable); emits nodeChanged.
  void setTrainable(NodeId id, bool trainable);
  void reset(Graph g);

  // Groups mutations so that shapes are inferred once, at the end.
  void beginBatch() { ++batch_; }
  void endBatch();

 signals:
  void nodeAdded(dc::NodeId id);
  void nodeRemoved(dc::NodeId id);
  void nodeMoved(dc::NodeId id);
  void nodeChanged(dc::NodeId id);  // name, attributes or trainable
  void edgeAdded(dc::NodeId src, dc::NodeId dst, int port);
  void edgeRemoved(dc::NodeId src, dc::NodeId dst, int port);
  void modelReset();
  void shapesChanged();  // shapes() has been re-inferred

 private:
  void revalidate();

  Graph graph_;
  std::map<NodeId, NodeShape> shapes_;
  int batch_ = 0;
  bool pending_ = false;
};

}  // namespace dc::widgets
