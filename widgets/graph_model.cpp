#include "widgets/graph_model.h"

#include <algorithm>

namespace dc::widgets {

GraphModel::GraphModel(QObject* parent) : QObject(parent) {}

const NodeShape* GraphModel::shape(NodeId id) const {
  auto it = shapes_.find(id);
  return it == shapes_.end() ? nullptr : &it->second;
}

NodeId GraphModel::nextId() const {
  return graph_.nodes().empty() ? 1 : graph_.nodes().rbegin()->first + 1;
}

void GraphModel::addNode(const Node& n) {
  graph_.add_node(n.type, n.name, n.attrs, n.x, n.y, n.id);
  graph_.set_trainable(n.id, n.trainable);  // undo of a delete keeps a frozen node frozen
  Q_EMIT nodeAdded(n.id);
  revalidate();
}

void GraphModel::removeNode(NodeId id) {
  graph_.remove_node(id);
  Q_EMIT nodeRemoved(id);
  revalidate();
}

void GraphModel::connect(const Edge& e) {
  graph_.connect(e.src, e.dst, e.dst_port);
  Q_EMIT edgeAdded(e.src, e.dst, e.dst_port);
  revalidate();
}

void GraphModel::disconnect(const Edge& e) {
  graph_.disconnect(e);
  Q_EMIT edgeRemoved(e.src, e.dst, e.dst_port);
  revalidate();
}

void GraphModel::moveNode(NodeId id, QPointF pos) {
  graph_.move(id, pos.x(), pos.y());
  Q_EMIT nodeMoved(id);  // positions never change shapes
}

void GraphModel::setAttr(NodeId id, const std::string& name, const AttrValue& v) {
  graph_.set_attr(id, name, v);
  Q_EMIT nodeChanged(id);
  revalidate();
}

void GraphModel::rename(NodeId id, const std::string& name) {
  graph_.rename(id, name);
  Q_EMIT nodeChanged(id);
  revalidate();  // messages name the node
}

void GraphModel::setTrainable(NodeId id, bool trainable) {
  graph_.set_trainable(id, trainable);
  Q_EMIT nodeChanged(id);  // shapes do not depend on it
}

void GraphModel::reset(Graph g) {
  graph_ = std::move(g);
  shapes_ = graph_.infer_shapes();
  pending_ = false;
  Q_EMIT modelReset();
  Q_EMIT shapesChanged();
}

void GraphModel::endBatch() {
  batch_ = std::max(0, batch_ - 1);
  if (batch_ == 0 && pending_) revalidate();
}

void GraphModel::revalidate() {
  if (batch_ > 0) {
    pending_ = true;
    return;
  }
  pending_ = false;
  shapes_ = graph_.infer_shapes();
  Q_EMIT shapesChanged();
}

}  // namespace dc::widgets
