#include "widgets/edit_commands.h"

#include <deepcanvas/layer.h>

#include <algorithm>

namespace dc::widgets {

namespace {

// Keeps shape inference to one run per command however many parts it has.
struct Batch {
  explicit Batch(GraphModel* m) : m(m) { m->beginBatch(); }
  ~Batch() { m->endBatch(); }
  GraphModel* m;
};

}  // namespace

AddNodesCommand::AddNodesCommand(GraphModel* m, std::vector<Node> nodes, std::vector<Edge> edges,
                                 const QString& text)
    : QUndoCommand(text), model_(m), nodes_(std::move(nodes)), edges_(std::move(edges)) {}

void AddNodesCommand::redo() {
  Batch b(model_);
  for (const Node& n : nodes_) model_->addNode(n);
  for (const Edge& e : edges_) model_->connect(e);
}

void AddNodesCommand::undo() {
  Batch b(model_);
  for (auto it = edges_.rbegin(); it != edges_.rend(); ++it) model_->disconnect(*it);
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) model_->removeNode(it->id);
}

RemoveItemsCommand::RemoveItemsCommand(GraphModel* m, const std::vector<NodeId>& nodes,
                                       const std::vector<Edge>& edges)
    : model_(m) {
  const Graph& g = m->graph();
  auto add_edge = [&](const Edge& e) {
    if (std::find(edges_.begin(), edges_.end(), e) == edges_.end()) edges_.push_back(e);
  };
  for (const Edge& e : edges) add_edge(e);
  for (NodeId id : nodes) {
    nodes_.push_back(g.node(id));
    for (const Edge& e : g.in_edges(id)) add_edge(e);
    for (const Edge& e : g.out_edges(id)) add_edge(e);
  }
  if (nodes_.size() == 1 && edges_.empty())
    setText(QObject::tr("Delete %1").arg(QString::fromStdString(nodes_[0].name)));
  else if (nodes_.empty())
    setText(QObject::tr("Delete %n connection(s)", nullptr, int(edges_.size())));
  else
    setText(QObject::tr("Delete %n layer(s)", nullptr, int(nodes_.size())));
}

void RemoveItemsCommand::redo() {
  Batch b(model_);
  for (const Edge& e : edges_) model_->disconnect(e);
  for (const Node& n : nodes_) model_->removeNode(n.id);
}

void RemoveItemsCommand::undo() {
  Batch b(model_);
  for (const Node& n : nodes_) model_->addNode(n);
  for (const Edge& e : edges_) model_->connect(e);
}

ConnectCommand::ConnectCommand(GraphModel* m, Edge e)
    : QUndoCommand(QObject::tr("Connect %1 to %2")
                       .arg(QString::fromStdString(m->graph().node(e.src).name),
                            QString::fromStdString(m->graph().node(e.dst).name))),
      model_(m),
      edge_(e) {}

void ConnectCommand::redo() {
  model_->connect(edge_);
}
void ConnectCommand::undo() {
  model_->disconnect(edge_);
}

MoveNodesCommand::MoveNodesCommand(GraphModel* m, std::map<NodeId, QPointF> from,
                                   std::map<NodeId, QPointF> to, bool mergeable,
                                   const QString& text)
    : QUndoCommand(text),
      model_(m),
      from_(std::move(from)),
      to_(std::move(to)),
      mergeable_(mergeable) {}

void MoveNodesCommand::apply(const std::map<NodeId, QPointF>& pos) {
  for (const auto& [id, p] : pos)
    if (model_->graph().find(id)) model_->moveNode(id, p);
}

void MoveNodesCommand::redo() {
  apply(to_);
}
void MoveNodesCommand::undo() {
  apply(from_);
}

bool MoveNodesCommand::mergeWith(const QUndoCommand* other) {
  auto* o = static_cast<const MoveNodesCommand*>(other);
  if (!o->mergeable_ || o->to_.size() != to_.size()) return false;
  for (const auto& [id, p] : o->to_)
    if (!to_.count(id)) return false;
  to_ = o->to_;
  return true;
}

SetAttrCommand::SetAttrCommand(GraphModel* m, NodeId id, std::string name, AttrValue value)
    : model_(m), node_(id), name_(std::move(name)), new_(std::move(value)) {
  const Node& n = m->graph().node(id);
  old_ = n.attrs.get(name_);
  const LayerDescriptor& d = LayerRegistry::instance().get(n.type);
  Attrs after = n.attrs;
  after.set(name_, new_);
  int ports = d.num_inputs(after);
  for (const Edge& e : m->graph().in_edges(id))
    if (e.dst_port >= ports) dropped_.push_back(e);
  setText(QObject::tr("Set %1.%2 to %3")
              .arg(QString::fromStdString(n.name), QString::fromStdString(name_),
                   QString::fromStdString(attr_to_string(new_))));
}

void SetAttrCommand::redo() {
  Batch b(model_);
  for (const Edge& e : dropped_) model_->disconnect(e);
  model_->setAttr(node_, name_, new_);
}

void SetAttrCommand::undo() {
  Batch b(model_);
  model_->setAttr(node_, name_, old_);
  for (const Edge& e : dropped_) model_->connect(e);
}

bool SetAttrCommand::mergeWith(const QUndoCommand* other) {
  auto* o = static_cast<const SetAttrCommand*>(other);
  if (o->node_ != node_ || o->name_ != name_ || !o->dropped_.empty() || !dropped_.empty())
    return false;
  new_ = o->new_;
  setText(o->text());
  return true;
}

SetTrainableCommand::SetTrainableCommand(GraphModel* m, std::vector<NodeId> ids, bool trainable)
    : model_(m), new_(trainable) {
  for (NodeId id : ids) old_[id] = m->graph().node(id).trainable;
  const QString what = old_.size() == 1
                           ? QString::fromStdString(m->graph().node(old_.begin()->first).name)
                           : QObject::tr("%n layer(s)", nullptr, int(old_.size()));
  setText(trainable ? QObject::tr("Unfreeze %1").arg(what) : QObject::tr("Freeze %1").arg(what));
}

void SetTrainableCommand::redo() {
  for (const auto& [id, was] : old_) model_->setTrainable(id, new_);
}

void SetTrainableCommand::undo() {
  for (const auto& [id, was] : old_) model_->setTrainable(id, was);
}

RenameCommand::RenameCommand(GraphModel* m, NodeId id, std::string name)
    : model_(m), node_(id), old_(m->graph().node(id).name), new_(std::move(name)) {
  setText(QObject::tr("Rename %1 to %2")
              .arg(QString::fromStdString(old_), QString::fromStdString(new_)));
}

void RenameCommand::redo() {
  model_->rename(node_, new_);
}
void RenameCommand::undo() {
  model_->rename(node_, old_);
}

ReplaceGraphCommand::ReplaceGraphCommand(GraphModel* m, Graph after, const QString& text)
    : QUndoCommand(text), model_(m), before_(m->graph()), after_(std::move(after)) {}

void ReplaceGraphCommand::redo() {
  model_->reset(after_);
}

void ReplaceGraphCommand::undo() {
  model_->reset(before_);
}

}  // namespace dc::widgets
