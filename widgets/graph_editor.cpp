#include "widgets/graph_editor.h"

#include "widgets/auto_layout.h"
#include "widgets/connection_check.h"
#include "widgets/edit_commands.h"
#include "widgets/graph_model.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/project.h>

#include <QApplication>
#include <QClipboard>
#include <QMimeData>
#include <QUndoStack>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <tuple>

namespace dc::widgets {

namespace {

QPointF snapped(QPointF p) {
  const double g = NodeScene::kGrid;
  return {std::round(p.x() / g) * g, std::round(p.y() / g) * g};
}

// "conv12" -> "conv": pasted copies are numbered afresh from the base.
std::string nameBase(const std::string& name) {
  size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  std::string b = name.substr(0, end);
  while (!b.empty() && (b.back() == '_' || b.back() == '-')) b.pop_back();
  return b.empty() ? "node" : b;
}

}  // namespace

GraphEditor::GraphEditor(QObject* parent)
    : QObject(parent),
      model_(new GraphModel(this)),
      undo_(new QUndoStack(this)),
      scene_(new NodeScene(model_, this)) {
  register_builtin_layers();
  // The scene offers a connection through a Flatten while dragging (and
  // says so); released, it is made here.
  connect(scene_, &NodeScene::connectRequested, this, [this](NodeId s, NodeId d, int p) {
    if (flattenBridges(model_->graph(), s, d, p))
      connectThroughFlatten(s, d, p);
    else
      connectPorts(s, d, p);
  });
  connect(scene_, &NodeScene::moveRequested, this,
          [this](const std::map<NodeId, QPointF>& from, const std::map<NodeId, QPointF>& to) {
            // The items are already where the user left them; the command
            // records it so undo can put them back.
            undo_->push(new MoveNodesCommand(model_, from, to, true,
                                             tr("Move %n layer(s)", nullptr, int(to.size()))));
          });
  connect(scene_, &NodeScene::statusMessage, this, &GraphEditor::statusMessage);
  connect(scene_, &NodeScene::nodeDoubleClicked, this, [this](NodeId id) {
    if (const Node* n = model_->graph().find(id); n && n->type == kBlockType) openBlock(id);
  });
  // A message of the editor's ("Cannot connect: …", a refused value, "Laid
  // out in rows…; Edit → Undo restores the line") describes the graph as it
  // was: once an undo, redo or new edit changes it, the message is stale.
  // A message the change itself sends comes after indexChanged and stays.
  connect(this, &GraphEditor::statusMessage, this,
          [this](const QString& m) { status_shown_ = !m.isEmpty(); });
  connect(undo_, &QUndoStack::indexChanged, this, [this] {
    if (status_shown_) Q_EMIT statusMessage(QString());
  });
}

GraphEditor::~GraphEditor() {
  // The scene goes first: its items read the model while they are deleted.
  delete scene_;
}

const Graph& GraphEditor::graph() const {
  return model_->graph();
}

void GraphEditor::loadGraph(Graph g) {
  undo_->clear();
  if (!frames_.empty()) {
    frames_.clear();
    Q_EMIT levelChanged();
  }
  model_->reset(std::move(g));
  undo_->setClean();
  paste_count_ = 0;
}

bool GraphEditor::push(QUndoCommand* c, QString* why) {
  try {
    undo_->push(c);  // runs redo(), which may throw if the engine refuses
    return true;
  } catch (const Error& e) {
    // redo() threw before the stack stored the command, so it is still
    // ours. Callers validate first; this only guards against an engine
    // refusal they did not foresee (the model refuses before it changes).
    delete c;
    if (why) *why = QString::fromUtf8(e.what());
    Q_EMIT statusMessage(QString::fromUtf8(e.what()));
    return false;
  }
}

NodeId GraphEditor::addLayer(const QString& type, QPointF pos, QString* why) {
  const LayerDescriptor* d = LayerRegistry::instance().find(type.toStdString());
  if (!d) {
    if (why) *why = tr("unknown layer type '%1'").arg(type);
    return -1;
  }
  // Resolve the name, id and defaults now, so redo after undo recreates the
  // very same node.
  Graph trial = model_->graph();
  NodeId id = model_->nextId();
  QPointF p = scene_->snapToGrid() ? snapped(pos) : pos;
  trial.add_node(d->type, "", {}, p.x(), p.y(), id);
  Node n = trial.node(id);
  if (!push(new AddNodesCommand(model_, {n}, {}, tr("Add %1").arg(QString::fromStdString(n.name))),
            why))
    return -1;
  scene_->selectNodes({id});
  return id;
}

bool GraphEditor::connectPorts(NodeId src, NodeId dst, int port, QString* why) {
  std::string problem = connectionProblem(model_->graph(), src, dst, port);
  if (!problem.empty()) {
    QString msg = QString::fromStdString(problem);
    if (why) *why = msg;
    Q_EMIT statusMessage(tr("Cannot connect: %1").arg(msg));
    return false;
  }
  return push(new ConnectCommand(model_, Edge{src, dst, port}), why);
}

NodeId GraphEditor::connectThroughFlatten(NodeId src, NodeId dst, int port, QString* why) {
  const Graph& g = model_->graph();
  if (!flattenBridges(g, src, dst, port)) {
    const std::string problem = connectionProblem(g, src, dst, port);
    if (why) *why = QString::fromStdString(problem.empty() ? "no Flatten is needed" : problem);
    return 0;
  }
  // Between the two, a row below them (further down while that spot is
  // taken): the line stays readable and no layer is moved.
  const Node &a = g.node(src), &b = g.node(dst);
  QPointF at((a.x + b.x) / 2, std::max(a.y, b.y) + 100);
  if (scene_->snapToGrid()) at = snapped(at);
  for (int i = 0; i < 50 && spotTaken(at); ++i) at.ry() += 100;
  Graph trial = g;
  const NodeId id = model_->nextId();
  trial.add_node("Flatten", "", {}, at.x(), at.y(), id);
  Node n = trial.node(id);
  const QString text = tr("Connect %1 to %2 through %3")
                           .arg(QString::fromStdString(a.name), QString::fromStdString(b.name),
                                QString::fromStdString(n.name));
  if (!push(new AddNodesCommand(model_, {n}, {Edge{src, id, 0}, Edge{id, dst, port}}, text), why))
    return 0;
  Q_EMIT statusMessage(flattenNote(id, src, dst));
  return id;
}

QString GraphEditor::flattenNote(NodeId flat, NodeId src, NodeId dst) const {
  const Graph& g = model_->graph();
  const NodeShape up = g.infer_shapes()[src];  // a copy: the map is a temporary
  return tr("Added %1: %2 takes 1-D features, so %3's %4 output is flattened.")
      .arg(QString::fromStdString(g.node(flat).name), QString::fromStdString(g.node(dst).name),
           QString::fromStdString(g.node(src).name),
           up.ok() ? QString::fromStdString(up.shape->str()) : QString());
}

bool GraphEditor::setAttr(NodeId id, const std::string& name, const AttrValue& v, QString* why) {
  const Node* n = model_->graph().find(id);
  if (!n) return false;
  const LayerDescriptor& d = LayerRegistry::instance().get(n->type);
  const AttrSpec* spec = d.find_attr(name);
  std::string err = spec ? validate_attr(*spec, v) : "unknown attribute '" + name + "'";
  if (!err.empty()) {
    if (why) *why = QString::fromStdString(node_label(*n) + ": " + err);
    Q_EMIT statusMessage(QString::fromStdString(node_label(*n) + ": " + err));
    return false;
  }
  if (n->attrs.has(name) && n->attrs.get(name) == v) return true;
  return push(new SetAttrCommand(model_, id, name, v), why);
}

bool GraphEditor::rename(NodeId id, const QString& name, QString* why) {
  const Node* n = model_->graph().find(id);
  if (!n) return false;
  std::string s = name.trimmed().toStdString();
  if (s == n->name) return true;
  std::string err;
  if (s.empty())
    err = "a layer name cannot be empty";
  else if (model_->graph().find_by_name(s))
    err = "a layer named '" + s + "' already exists";
  if (!err.empty()) {
    if (why) *why = QString::fromStdString(err);
    Q_EMIT statusMessage(QString::fromStdString(err));
    return false;
  }
  return push(new RenameCommand(model_, id, s), why);
}

bool GraphEditor::removeNodes(const std::vector<NodeId>& ids, const std::vector<Edge>& edges) {
  if (ids.empty() && edges.empty()) return false;
  return push(new RemoveItemsCommand(model_, ids, edges), nullptr);
}

bool GraphEditor::moveNodes(const std::map<NodeId, QPointF>& to) {
  std::map<NodeId, QPointF> from;
  for (const auto& [id, p] : to) {
    const Node& n = model_->graph().node(id);
    from[id] = QPointF(n.x, n.y);
  }
  return push(new MoveNodesCommand(model_, from, to, true, tr("Move")), nullptr);
}

bool GraphEditor::setTrainable(const std::vector<NodeId>& ids, bool trainable) {
  std::vector<NodeId> change;
  for (NodeId id : ids)
    if (const Node* n = model_->graph().find(id); n && n->trainable != trainable)
      change.push_back(id);
  if (change.empty()) return false;
  return push(new SetTrainableCommand(model_, change, trainable), nullptr);
}

NodeId GraphEditor::replaceHead(NodeId keep, int classes, QString* why) {
  auto refuse = [&](const QString& m) {
    if (why) *why = m;
    Q_EMIT statusMessage(tr("Cannot replace the head: %1").arg(m));
    return NodeId(-1);
  };
  const Graph& g = model_->graph();
  const Node* base = g.find(keep);
  if (!base) return refuse(tr("select the layer to keep up to"));
  const NodeShape* s = model_->shape(keep);
  if (!s || !s->ok())
    return refuse(tr("%1 has no valid output shape").arg(QString::fromStdString(base->name)));
  const Shape out = *s->shape;
  if (classes <= 0) {
    // No dataset: as many outputs as the network has now.
    std::vector<NodeId> outs = g.outputs();
    const NodeShape* os = outs.size() == 1 ? model_->shape(outs[0]) : nullptr;
    classes = os && os->ok() ? int(os->shape->numel()) : 0;
    if (classes <= 0) return refuse(tr("load a dataset first, to know the number of classes"));
  }
  // What stays: the kept node and everything upstream of it.
  const std::unordered_set<NodeId> kept = upstream_of(g, keep);
  std::vector<NodeId> removed;
  for (const auto& [id, n] : g.nodes())
    if (!kept.count(id)) removed.push_back(id);
  // Build the head on a scratch copy, so names are unique and the result is
  // checked before anything changes.
  Graph trial = g;
  for (NodeId id : removed) trial.remove_node(id);
  NodeId next = model_->nextId();
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  NodeId prev = keep;
  double x = base->x;
  auto append = [&](const std::string& type, const std::string& name, Attrs a) {
    x += 190;  // the templates' column spacing
    NodeId id = next++;
    const std::string unique = trial.find_by_name(name) ? trial.unique_name(name) : name;
    trial.add_node(type, unique, std::move(a), x, base->y, id);
    trial.connect(prev, id, 0);
    nodes.push_back(trial.node(id));
    edges.push_back(Edge{prev, id, 0});
    prev = id;
  };
  try {
    if (out.rank() == 3)
      append("GlobalAvgPool2D", "head_pool", {});
    else if (out.rank() > 1)
      append("Flatten", "head_flatten", {});
    Attrs dense;
    dense.set("units", int64_t(classes));
    append("Dense", "head_fc", dense);
    trial.validate();
  } catch (const Error& e) {
    return refuse(QString::fromUtf8(e.what()));
  }
  undo_->beginMacro(tr("Replace head after %1").arg(QString::fromStdString(base->name)));
  bool ok = removed.empty() || push(new RemoveItemsCommand(model_, removed, {}), why);
  ok = ok && push(new AddNodesCommand(model_, nodes, edges, tr("Add the new head")), why);
  undo_->endMacro();
  if (!ok) {
    undo_->undo();  // the macro's parts that did run
    return -1;
  }
  scene_->selectNodes({prev});
  Q_EMIT statusMessage(tr("New head: Dense with %n output(s) after %1", nullptr, classes)
                           .arg(QString::fromStdString(base->name)));
  return prev;
}

QPointF GraphEditor::nextFreePosition() const {
  const Graph& g = model_->graph();
  if (g.empty()) return {40, 120};
  std::vector<NodeId> sel = scene_->selectedNodes();
  const Node* anchor = nullptr;
  for (NodeId id : sel)
    if (const Node* n = g.find(id); n && (!anchor || n->x > anchor->x)) anchor = n;
  if (!anchor)
    for (const auto& [id, n] : g.nodes())
      if (!anchor || n.x > anchor->x) anchor = &n;
  // One column to the right (the templates' spacing), then down until the
  // spot is free.
  QPointF p = snapped(QPointF(anchor->x + 190, anchor->y));
  for (int i = 0; i < 50 && spotTaken(p); ++i) p.ry() += 100;
  return p;
}

bool GraphEditor::spotTaken(QPointF q) const {
  for (const auto& [id, n] : model_->graph().nodes())
    if (std::abs(n.x - q.x()) < 150 && std::abs(n.y - q.y()) < 80) return true;
  return false;
}

NodeId GraphEditor::appendLayer(const QString& type) {
  std::vector<NodeId> sel = scene_->selectedNodes();
  undo_->beginMacro(tr("Add %1").arg(type));
  const QPointF at = nextFreePosition();
  // Would the new layer need a Flatten after the selected one? Then the
  // Flatten takes the free spot and the layer the next, in one line.
  bool bridge = false;
  if (sel.size() == 1 && LayerRegistry::instance().find(type.toStdString())) {
    Graph trial = model_->graph();
    const NodeId t = trial.add_node(type.toStdString(), "", {}, at.x(), at.y());
    bridge = flattenBridges(trial, sel[0], t, 0);
  }
  const NodeId flat = bridge ? addLayer("Flatten", at) : 0;
  NodeId id = addLayer(type, bridge ? nextFreePosition() : at);
  if (id > 0 && flat > 0) {
    connectPorts(sel[0], flat, 0);
    connectPorts(flat, id, 0);
  } else if (id > 0 && sel.size() == 1 &&
             connectionProblem(model_->graph(), sel[0], id, 0).empty()) {
    connectPorts(sel[0], id, 0);
  }
  undo_->endMacro();
  // After the macro: its end is the index change that clears older notes.
  if (id > 0 && flat > 0) Q_EMIT statusMessage(flattenNote(flat, sel[0], id));
  return id;
}

void GraphEditor::deleteSelection() {
  removeNodes(scene_->selectedNodes(), scene_->selectedEdges());
}

bool GraphEditor::pushGraph(Graph after, const QString& text, QString* why) {
  return push(new ReplaceGraphCommand(model_, std::move(after), text), why);
}

namespace {
// Runs an engine block edit, turning its refusal into *why.
template <typename F>
bool tryEdit(F&& f, QString* why, GraphEditor* e) {
  try {
    f();
    return true;
  } catch (const Error& ex) {
    if (why) *why = QString::fromUtf8(ex.what());
    Q_EMIT e->statusMessage(QString::fromUtf8(ex.what()));
    return false;
  }
}
}  // namespace

NodeId GraphEditor::groupSelection(const QString& name, QString* why) {
  Graph g = model_->graph();
  NodeId id = -1;
  if (!tryEdit([&] { id = group_as_block(g, scene_->selectedNodes(), name.toStdString()); }, why,
               this))
    return -1;
  if (!pushGraph(std::move(g), tr("Group as Block %1").arg(name), why)) return -1;
  scene_->selectNodes({id});
  return id;
}

bool GraphEditor::ungroup(NodeId block, QString* why) {
  Graph g = model_->graph();
  std::vector<NodeId> ids;
  if (!tryEdit([&] { ids = ungroup_block(g, block); }, why, this)) return false;
  const QString name = QString::fromStdString(model_->graph().node(block).name);
  if (!pushGraph(std::move(g), tr("Ungroup %1").arg(name), why)) return false;
  scene_->selectNodes(ids);
  return true;
}

bool GraphEditor::repeatBlock(NodeId block, int count, QString* why) {
  Graph g = model_->graph();
  std::vector<NodeId> ids;
  if (!tryEdit([&] { ids = repeat_block(g, block, count); }, why, this)) return false;
  if (!pushGraph(std::move(g), tr("Repeat block \u00d7%1").arg(count), why)) return false;
  ids.insert(ids.begin(), block);
  scene_->selectNodes(ids);
  return true;
}

bool GraphEditor::renameBlockDefinition(const QString& from, const QString& to, QString* why) {
  Graph g = model_->graph();
  if (!tryEdit([&] { rename_block_definition(g, from.toStdString(), to.toStdString()); }, why,
               this))
    return false;
  return pushGraph(std::move(g), tr("Rename block %1 to %2").arg(from, to), why);
}

bool GraphEditor::setBlockDefinition(const BlockDef& d, QString* why) {
  Graph g = model_->graph();
  if (!tryEdit(
          [&] {
            check_block_definition(d);
            if (replace_block_definition(g, d.name, d) == 0)
              throw GraphError("no block named '" + d.name + "'");
          },
          why, this))
    return false;
  return pushGraph(std::move(g), tr("Edit block %1").arg(QString::fromStdString(d.name)), why);
}

namespace {

// Opening or closing a block: restores the editor's level both ways.
// Consecutive ones merge (open, then close with no edit between, leaves
// nothing in the history).
class NavigateCommand : public QUndoCommand {
 public:
  NavigateCommand(GraphEditor* e, EditorLevel after, const QString& text)
      : QUndoCommand(text), editor_(e), before_(e->level()), after_(std::move(after)) {}
  void redo() override { editor_->setLevel(after_); }
  void undo() override { editor_->setLevel(before_); }
  int id() const override { return kNavigateCommandId; }
  bool mergeWith(const QUndoCommand* other) override {
    const auto* o = dynamic_cast<const NavigateCommand*>(other);
    if (!o) return false;
    after_ = o->after_;
    if (after_.frames.size() == before_.frames.size() && after_.shown == before_.shown)
      setObsolete(true);
    return true;
  }

 private:
  static constexpr int kNavigateCommandId = 1003;
  GraphEditor* editor_;
  EditorLevel before_, after_;
};

// The definition that frame f's shown graph `inner` stands for; throws
// GraphError when it is no longer one (its output deleted, an input that
// feeds nothing).
BlockDef definitionInside(const BlockFrame& f, const Graph& inner) {
  BlockDef d;
  d.name = f.block;
  d.graph = inner;
  for (NodeId p : f.ports) {
    std::vector<BlockPort> ports;
    if (inner.find(p)) {
      for (const Edge& e : inner.out_edges(p))
        ports.push_back({inner.node(e.dst).name, e.dst_port});
      d.graph.remove_node(p);
    }
    std::sort(ports.begin(), ports.end(), [](const BlockPort& a, const BlockPort& b) {
      return std::tie(a.node, a.port) < std::tie(b.node, b.port);
    });
    d.inputs.push_back(std::move(ports));
  }
  const Node* out = inner.find(f.output);
  if (!out) throw GraphError("block '" + f.block + "' lost its output layer; undo or add it back");
  d.output = out->name;
  check_block_definition(d);
  return d;
}

}  // namespace

EditorLevel GraphEditor::level() const {
  return {frames_, model_->graph()};
}

void GraphEditor::setLevel(const EditorLevel& level) {
  const bool changed = level.frames.size() != frames_.size() ||
                       (!frames_.empty() && frames_.back().block != level.frames.back().block);
  frames_ = level.frames;
  model_->reset(level.shown);
  if (changed) Q_EMIT levelChanged();
}

QStringList GraphEditor::openBlocks() const {
  QStringList names;
  for (const BlockFrame& f : frames_) names << QString::fromStdString(f.block);
  return names;
}

bool GraphEditor::openBlock(NodeId block, QString* why) {
  const Graph& g = model_->graph();
  EditorLevel after{frames_, {}};
  BlockFrame f;
  if (!tryEdit(
          [&] {
            const Node& n = g.node(block);
            const auto def = block_definition_of(n);
            std::vector<Shape> in(def->inputs.size());
            for (const Edge& e : g.in_edges(block)) {
              const NodeShape* s = model_->shape(e.src);
              if (size_t(e.dst_port) < in.size() && s && s->ok())
                in[size_t(e.dst_port)] = *s->shape;
            }
            for (size_t i = 0; i < in.size(); ++i)
              if (in[i].rank() == 0)
                throw GraphError("connect " + node_label(n) + "'s input " + std::to_string(i) +
                                 " to a layer with a valid shape to open it");
            f.block = def->name;
            f.outer = g;
            after.shown = def->graph;
            Graph& shown = after.shown;
            double x0 = 1e300;
            for (const auto& [id, m] : shown.nodes()) x0 = std::min(x0, m.x);
            for (size_t i = 0; i < in.size(); ++i) {
              Attrs a;
              a.set("shape", in[i].dims());
              const NodeId p = shown.add_node("Input", shown.unique_name("block_input"), a,
                                              x0 - 240, 120.0 * double(i));
              for (const BlockPort& t : def->inputs[i])
                shown.connect(p, shown.find_by_name(t.node)->id, t.port);
              f.ports.push_back(p);
            }
            f.output = shown.find_by_name(def->output)->id;
          },
          why, this))
    return false;
  const QString text = tr("Open block %1").arg(QString::fromStdString(f.block));
  after.frames.push_back(std::move(f));
  return push(new NavigateCommand(this, std::move(after), text), why);
}

bool GraphEditor::closeBlock(QString* why) {
  if (frames_.empty()) return false;
  EditorLevel after{frames_, {}};
  after.frames.pop_back();
  const BlockFrame& f = frames_.back();
  if (!tryEdit(
          [&] {
            const BlockDef d = definitionInside(f, model_->graph());
            after.shown = f.outer;
            replace_block_definition(after.shown, f.block, d);
          },
          why, this))
    return false;
  const QString text = tr("Close block %1").arg(QString::fromStdString(f.block));
  return push(new NavigateCommand(this, std::move(after), text), why);
}

Graph GraphEditor::projectGraph() const {
  Graph g = model_->graph();
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
    Graph outer = it->outer;
    try {
      replace_block_definition(outer, it->block, definitionInside(*it, g));
    } catch (const Error&) {
      // Not a block as it stands (closing says why): the last good one.
    }
    g = std::move(outer);
  }
  return g;
}

void GraphEditor::selectAll() {
  for (QGraphicsItem* i : scene_->items()) i->setSelected(true);
}

bool GraphEditor::copySelection() {
  std::vector<NodeId> ids = scene_->selectedNodes();
  if (ids.empty()) return false;
  const Graph& g = model_->graph();
  Graph part;
  for (NodeId id : ids) {
    const Node& n = g.node(id);
    part.add_node(n.type, n.name, n.attrs, n.x, n.y, n.id);
    part.set_trainable(n.id, n.trainable);
  }
  for (const Edge& e : g.edges())
    if (part.find(e.src) && part.find(e.dst)) part.connect(e.src, e.dst, e.dst_port);
  QByteArray json = QByteArray::fromStdString(graph_to_json(part));
  auto* mime = new QMimeData;
  mime->setData(kGraphMimeType, json);
  mime->setText(QString::fromUtf8(json));
  QApplication::clipboard()->setMimeData(mime);
  paste_count_ = 0;
  Q_EMIT statusMessage(tr("Copied %n layer(s)", nullptr, int(ids.size())));
  return true;
}

void GraphEditor::cutSelection() {
  if (!copySelection()) return;
  undo_->beginMacro(tr("Cut"));
  deleteSelection();
  undo_->endMacro();
}

std::vector<NodeId> GraphEditor::paste() {
  const QMimeData* mime = QApplication::clipboard()->mimeData();
  if (!mime) return {};
  QByteArray json =
      mime->hasFormat(kGraphMimeType) ? mime->data(kGraphMimeType) : mime->text().toUtf8();
  if (json.trimmed().isEmpty()) return {};
  Graph part;
  try {
    part = graph_from_json(json.toStdString(), "clipboard");
  } catch (const Error& e) {
    Q_EMIT statusMessage(tr("Nothing to paste: %1").arg(QString::fromUtf8(e.what())));
    return {};
  }
  ++paste_count_;
  // Below the copied layers (a row further for each paste) and a little to
  // the right: a 40-pixel diagonal offset left the copy almost on the original.
  double top = 1e300, bottom = -1e300;
  for (const auto& [id, n] : part.nodes()) {
    top = std::min(top, n.y);
    bottom = std::max(bottom, n.y);
  }
  const QPointF offset(40.0 * paste_count_, (bottom - top + 100.0) * paste_count_);
  // Build the result in a scratch copy so names stay unique among the
  // pasted nodes as well as against the existing ones.
  Graph trial = model_->graph();
  NodeId next = model_->nextId();
  std::map<NodeId, NodeId> remap;
  std::vector<Node> nodes;
  for (const auto& [old_id, n] : part.nodes()) {
    std::string name = trial.find_by_name(n.name) ? trial.unique_name(nameBase(n.name)) : n.name;
    NodeId id = next++;
    QPointF p = QPointF(n.x, n.y) + offset;
    if (scene_->snapToGrid()) p = snapped(p);
    trial.add_node(n.type, name, n.attrs, p.x(), p.y(), id);
    trial.set_trainable(id, n.trainable);
    remap[old_id] = id;
    nodes.push_back(trial.node(id));
  }
  std::vector<Edge> edges;
  for (const Edge& e : part.edges()) edges.push_back(Edge{remap[e.src], remap[e.dst], e.dst_port});
  QString why;
  if (!push(new AddNodesCommand(model_, nodes, edges,
                                tr("Paste %n layer(s)", nullptr, int(nodes.size()))),
            &why))
    return {};
  std::vector<NodeId> ids;
  for (const Node& n : nodes) ids.push_back(n.id);
  scene_->selectNodes(ids);
  return ids;
}

void GraphEditor::autoLayout(QSizeF canvas) {
  auto pos = widgets::autoLayout(model_->graph(), LayoutSpace{canvas.width(), canvas.height()});
  std::map<NodeId, QPointF> from, to;
  for (const auto& [id, p] : pos) {
    const Node& n = model_->graph().node(id);
    if (n.x == p.first && n.y == p.second) continue;
    from[id] = QPointF(n.x, n.y);
    to[id] = QPointF(p.first, p.second);
  }
  if (to.empty()) return;
  undo_->push(new MoveNodesCommand(model_, from, to, false, tr("Auto-layout")));
}

bool GraphEditor::wrapLongLine(QSizeF canvas) {
  if (!tooLongForOneLine(model_->graph(), LayoutSpace{canvas.width(), canvas.height()}))
    return false;
  const int before = undo_->index();
  autoLayout(canvas);
  if (undo_->index() == before) return false;
  Q_EMIT statusMessage(tr("Laid out in rows to fit the window (Edit → Undo restores the line)"));
  return true;
}

}  // namespace dc::widgets
