#include "widgets/node_scene.h"

#include "widgets/connection_check.h"
#include "widgets/edge_item.h"
#include "widgets/graph_model.h"
#include "widgets/node_item.h"

#include <QGraphicsPathItem>
#include <QGraphicsSceneMouseEvent>
#include <QPalette>
#include <QPen>

namespace dc::widgets {

NodeScene::NodeScene(GraphModel* model, QObject* parent) : QGraphicsScene(parent), model_(model) {
  // Items appear and vanish one at a time; the default BSP index would be
  // rebuilt on each, which is what makes large scenes sluggish.
  setItemIndexMethod(NoIndex);
  // A fixed, generous rectangle (grown on demand) rather than Qt's automatic
  // one, which would need the bounding rect of every item on each change.
  setSceneRect(-20000, -20000, 40000, 40000);
  connect(model_, &GraphModel::nodeAdded, this, &NodeScene::addNodeItem);
  connect(model_, &GraphModel::nodeRemoved, this, &NodeScene::removeNodeItem);
  connect(model_, &GraphModel::nodeMoved, this, [this](NodeId id) {
    NodeItem* it = nodeItem(id);
    const Node& n = model_->graph().node(id);
    if (it && it->pos() != QPointF(n.x, n.y)) {
      bool s = snap_;
      snap_ = false;  // the model's position is the truth, snapped or not
      it->setPos(n.x, n.y);
      snap_ = s;
    }
  });
  connect(model_, &GraphModel::nodeChanged, this, [this](NodeId id) {
    NodeItem* it = nodeItem(id);
    if (!it) return;
    int ports = it->numInputs();
    it->refresh();
    if (ports != it->numInputs())
      for (EdgeItem* e : it->edges()) e->updatePath();
  });
  connect(model_, &GraphModel::edgeAdded, this, [this](NodeId s, NodeId d, int p) {
    addEdgeItem(Edge{s, d, p});
  });
  connect(model_, &GraphModel::edgeRemoved, this, [this](NodeId s, NodeId d, int p) {
    removeEdgeItem(Edge{s, d, p});
  });
  connect(model_, &GraphModel::shapesChanged, this, &NodeScene::refreshShapes);
  connect(model_, &GraphModel::modelReset, this, &NodeScene::rebuild);
  rebuild();
}

NodeScene::~NodeScene() {
  // Deleting the items changes the selection; listeners such as the
  // property editor may already be half destroyed and must not hear of it.
  blockSignals(true);
  clear();
}

void NodeScene::setReadOnly(bool ro) {
  read_only_ = ro;
  for (auto& [id, it] : nodes_) {
    it->setFlag(QGraphicsItem::ItemIsMovable, !ro);
    it->setFlag(QGraphicsItem::ItemIsSelectable, !ro);
  }
  for (auto& [k, e] : edges_) e->setFlag(QGraphicsItem::ItemIsSelectable, !ro);
}

NodeItem* NodeScene::nodeItem(NodeId id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second;
}

EdgeItem* NodeScene::edgeItem(const Edge& e) const {
  auto it = edges_.find(EdgeKey{e.src, e.dst, e.dst_port});
  return it == edges_.end() ? nullptr : it->second;
}

std::vector<NodeId> NodeScene::selectedNodes() const {
  std::vector<NodeId> ids;
  for (QGraphicsItem* i : selectedItems())
    if (i->type() == NodeItem::Type) ids.push_back(static_cast<NodeItem*>(i)->nodeId());
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<Edge> NodeScene::selectedEdges() const {
  std::vector<Edge> v;
  for (QGraphicsItem* i : selectedItems())
    if (i->type() == EdgeItem::Type) v.push_back(static_cast<EdgeItem*>(i)->edge());
  return v;
}

void NodeScene::selectNodes(const std::vector<NodeId>& ids) {
  clearSelection();
  for (NodeId id : ids)
    if (NodeItem* it = nodeItem(id)) it->setSelected(true);
}

void NodeScene::ensureRoom(const QRectF& r) {
  const double m = 5000;
  QRectF need = r.adjusted(-m, -m, m, m);
  if (!sceneRect().contains(need)) setSceneRect(sceneRect().united(need));
}

void NodeScene::rebuild() {
  endConnectionDrag();
  clear();  // deletes every item
  nodes_.clear();
  edges_.clear();
  for (const auto& [id, n] : model_->graph().nodes()) addNodeItem(id);
  for (const Edge& e : model_->graph().edges()) addEdgeItem(e);
}

void NodeScene::addNodeItem(NodeId id) {
  auto* it = new NodeItem(model_, id);
  if (read_only_) {
    it->setFlag(QGraphicsItem::ItemIsMovable, false);
    it->setFlag(QGraphicsItem::ItemIsSelectable, false);
  }
  addItem(it);
  nodes_[id] = it;
  ensureRoom(it->sceneBoundingRect());
}

void NodeScene::removeNodeItem(NodeId id) {
  NodeItem* it = nodeItem(id);
  if (!it) return;
  if (drag_.from == it || drag_.hover == it) endConnectionDrag();
  // The model removes edges before their node; any left are stale items.
  for (EdgeItem* e : std::vector<EdgeItem*>(it->edges().begin(), it->edges().end()))
    removeEdgeItem(e->edge());
  nodes_.erase(id);
  press_positions_.erase(id);
  delete it;
}

void NodeScene::addEdgeItem(const Edge& e) {
  NodeItem* s = nodeItem(e.src);
  NodeItem* d = nodeItem(e.dst);
  if (!s || !d || edgeItem(e)) return;
  auto* item = new EdgeItem(e, s, d);
  if (read_only_) item->setFlag(QGraphicsItem::ItemIsSelectable, false);
  addItem(item);
  edges_[EdgeKey{e.src, e.dst, e.dst_port}] = item;
  s->edges().append(item);
  d->edges().append(item);
  updateEdgeLabel(item);
  s->update();
  d->update();
}

void NodeScene::removeEdgeItem(const Edge& e) {
  auto it = edges_.find(EdgeKey{e.src, e.dst, e.dst_port});
  if (it == edges_.end()) return;
  EdgeItem* item = it->second;
  item->source()->edges().removeAll(item);
  item->target()->edges().removeAll(item);
  item->source()->update();
  item->target()->update();
  edges_.erase(it);
  delete item;
}

void NodeScene::updateEdgeLabel(EdgeItem* e) {
  const NodeShape* s = model_->shape(e->edge().src);
  if (!s || !s->ok()) {
    e->setLabel(QString());
    return;
  }
  QString label = QString::fromStdString(s->shape->str());
  if (auto it = edge_suffixes_.find(e->edge().src); it != edge_suffixes_.end())
    label += QStringLiteral(" · ") + it->second;
  e->setLabel(label);
}

void NodeScene::setEdgeSuffixes(std::map<NodeId, QString> by_source) {
  if (by_source == edge_suffixes_) return;
  edge_suffixes_ = std::move(by_source);
  for (auto& [k, e] : edges_) updateEdgeLabel(e);
}

void NodeScene::refreshShapes() {
  // Only items whose text changed repaint; setLabel ignores equal labels.
  for (auto& [id, it] : nodes_) it->refresh();
  for (auto& [k, e] : edges_) updateEdgeLabel(e);
}

NodeItem* NodeScene::nodeAt(QPointF pos) const {
  for (QGraphicsItem* i : items(pos, Qt::IntersectsItemShape, Qt::DescendingOrder))
    if (i->type() == NodeItem::Type) return static_cast<NodeItem*>(i);
  return nullptr;
}

void NodeScene::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* e) {
  if (e->button() == Qt::LeftButton)
    if (NodeItem* n = nodeAt(e->scenePos())) {
      Q_EMIT nodeDoubleClicked(n->nodeId());
      e->accept();
      return;
    }
  QGraphicsScene::mouseDoubleClickEvent(e);
}

void NodeScene::mousePressEvent(QGraphicsSceneMouseEvent* e) {
  if (!read_only_ && e->button() == Qt::LeftButton) {
    if (NodeItem* n = nodeAt(e->scenePos())) {
      auto [port, output] = n->portAt(e->scenePos());
      if (port >= 0) {
        drag_ = Drag{};
        drag_.from = n;
        drag_.from_output = output;
        drag_.from_port = port;
        drag_.rubber = new QGraphicsPathItem;
        drag_.rubber->setPen(QPen(palette().color(QPalette::Highlight), 2, Qt::DashLine));
        drag_.rubber->setZValue(3);
        addItem(drag_.rubber);
        e->accept();
        return;
      }
    }
  }
  QGraphicsScene::mousePressEvent(e);
  press_positions_.clear();
  if (e->button() == Qt::LeftButton)
    for (QGraphicsItem* i : selectedItems())
      if (i->type() == NodeItem::Type)
        press_positions_[static_cast<NodeItem*>(i)->nodeId()] = i->pos();
}

void NodeScene::mouseMoveEvent(QGraphicsSceneMouseEvent* e) {
  if (!drag_.from) {
    QGraphicsScene::mouseMoveEvent(e);
    return;
  }
  QPointF start =
      drag_.from_output ? drag_.from->outputPortPos() : drag_.from->inputPortPos(drag_.from_port);
  QPointF end = e->scenePos();
  NodeItem* target = nodeAt(end);
  int tport = -1;
  if (target && target != drag_.from) {
    auto [p, output] = target->portAt(end);
    // From an output we look for an input, and the other way round.
    if (p >= 0 && output != drag_.from_output) tport = p;
  }
  if (target != drag_.hover || tport != drag_.hover_port) {
    if (drag_.hover) drag_.hover->clearHoverPort();
    drag_.hover = tport >= 0 ? target : nullptr;
    drag_.hover_port = tport;
    drag_.problem.clear();
    if (drag_.hover) {
      NodeId src = drag_.from_output ? drag_.from->nodeId() : target->nodeId();
      NodeId dst = drag_.from_output ? target->nodeId() : drag_.from->nodeId();
      int port = drag_.from_output ? tport : drag_.from_port;
      drag_.problem = connectionProblem(model_->graph(), src, dst, port);
      // A feature map into a Dense: legal through a Flatten, which the
      // editor inserts on release.
      const bool bridged =
          !drag_.problem.empty() && flattenBridges(model_->graph(), src, dst, port);
      if (bridged) drag_.problem.clear();
      target->setHoverPort(tport, !drag_.from_output, drag_.problem.empty());
      Q_EMIT statusMessage(
          bridged ? tr("Release to connect through a new Flatten (%1 takes 1-D "
                       "features)")
                        .arg(QString::fromStdString(model_->graph().node(dst).name))
          : drag_.problem.empty()
              ? tr("Release to connect")
              : tr("Cannot connect: %1").arg(QString::fromStdString(drag_.problem)));
    } else {
      Q_EMIT statusMessage(QString());
    }
  }
  if (drag_.hover) {
    end = drag_.from_output ? drag_.hover->inputPortPos(tport) : drag_.hover->outputPortPos();
    QPen pen = drag_.rubber->pen();
    pen.setColor(drag_.problem.empty() ? QColor(0x43, 0xa0, 0x47) : QColor(0xe5, 0x39, 0x35));
    drag_.rubber->setPen(pen);
  } else {
    QPen pen = drag_.rubber->pen();
    pen.setColor(palette().color(QPalette::Highlight));
    drag_.rubber->setPen(pen);
  }
  drag_.rubber->setPath(drag_.from_output ? EdgeItem::curve(start, end)
                                          : EdgeItem::curve(end, start));
  e->accept();
}

void NodeScene::mouseReleaseEvent(QGraphicsSceneMouseEvent* e) {
  if (drag_.from) {
    if (drag_.hover && drag_.problem.empty()) {
      NodeId a = drag_.from->nodeId(), b = drag_.hover->nodeId();
      int port = drag_.from_output ? drag_.hover_port : drag_.from_port;
      NodeId src = drag_.from_output ? a : b, dst = drag_.from_output ? b : a;
      endConnectionDrag();
      Q_EMIT statusMessage(QString());
      Q_EMIT connectRequested(src, dst, port);
    } else {
      // Keep a refusal's reason on screen after the mouse is released.
      endConnectionDrag();
    }
    e->accept();
    return;
  }
  QGraphicsScene::mouseReleaseEvent(e);
  std::map<NodeId, QPointF> from, to;
  for (const auto& [id, p] : press_positions_) {
    NodeItem* it = nodeItem(id);
    if (it && it->pos() != p) {
      from[id] = p;
      to[id] = it->pos();
    }
  }
  press_positions_.clear();
  if (!to.empty()) Q_EMIT moveRequested(from, to);
}

void NodeScene::endConnectionDrag() {
  if (drag_.hover) drag_.hover->clearHoverPort();
  delete drag_.rubber;
  drag_ = Drag{};
}

bool NodeScene::event(QEvent* e) {
  // Cached node pixmaps hold the old palette's colours.
  if (e->type() == QEvent::PaletteChange)
    for (auto& [id, it] : nodes_) it->update();
  return QGraphicsScene::event(e);
}

}  // namespace dc::widgets
