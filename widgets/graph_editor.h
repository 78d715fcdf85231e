#pragma once
// The node editor's controller: it owns the model, the scene and the undo
// stack, and offers every editing action as a method (add, connect, set
// attribute, rename, delete, copy, cut, paste, select all, auto-layout).
// Menus, the palette, the property editor and tests all go through these
// methods, and each one pushes exactly one QUndoCommand.
#include <deepcanvas/blocks.h>
#include <deepcanvas/graph.h>

#include <QObject>
#include <QPointF>
#include <QSizeF>
#include <QString>
#include <QStringList>
#include <map>
#include <vector>

class QUndoCommand;
class QUndoStack;

namespace dc::widgets {

class GraphModel;
class NodeScene;

// An open block (GraphEditor::openBlock): what the canvas shows inside it,
// and what closing it writes back.
struct BlockFrame {
  std::string block;          // the definition's name
  Graph outer;                // the graph it was opened from
  std::vector<NodeId> ports;  // per block input, the Input node standing for it
  NodeId output = -1;         // the layer whose output is the block's
};
// Where the editor is: the open blocks, outermost first, and the graph shown.
struct EditorLevel {
  std::vector<BlockFrame> frames;
  Graph shown;
};

// The clipboard MIME type; the text flavour carries the same JSON.
inline constexpr const char* kGraphMimeType = "application/x-deepcanvas-graph";

class GraphEditor : public QObject {
  Q_OBJECT
 public:
  explicit GraphEditor(QObject* parent = nullptr);
  ~GraphEditor() override;

  GraphModel* model() const { return model_; }
  NodeScene* scene() const { return scene_; }
  QUndoStack* undoStack() const { return undo_; }
  const Graph& graph() const;

  // Replaces the graph (open, new): not undoable, clears the history.
  void loadGraph(Graph g);

  // Each returns false (and sets *why) when the edit is refused; the graph
  // is then unchanged.
  NodeId addLayer(const QString& type, QPointF pos, QString* why = nullptr);
  // The palette's double-click: adds a layer at the next free position and,
  // when one layer is selected and the connection is legal, wires it after
  // that layer (through a new Flatten where only that makes it legal), in
  // one undo step.
  NodeId appendLayer(const QString& type);
  bool connectPorts(NodeId src, NodeId dst, int port, QString* why = nullptr);
  // A connection that is legal only through a new Flatten (flattenBridges:
  // a feature map into a Dense): adds the Flatten between the two, wired,
  // in one undo step, and returns its id; 0 (and *why) otherwise.
  NodeId connectThroughFlatten(NodeId src, NodeId dst, int port, QString* why = nullptr);
  bool setAttr(NodeId id, const std::string& name, const AttrValue& v, QString* why = nullptr);
  bool rename(NodeId id, const QString& name, QString* why = nullptr);
  bool removeNodes(const std::vector<NodeId>& ids, const std::vector<Edge>& edges = {});
  bool moveNodes(const std::map<NodeId, QPointF>& to);
  // Freezes (trainable false) or unfreezes the given nodes in one undo
  // step; only nodes whose flag changes are part of it. False when none does.
  bool setTrainable(const std::vector<NodeId>& ids, bool trainable);
  // Transfer learning's "new head": keeps `keep` and everything it depends
  // on, removes every other node, and appends GlobalAvgPool2D (for an image
  // shaped output) or Flatten (other shapes of rank > 1), then a Dense of
  // `classes` units (<= 0: the current output's size), the logits the
  // templates end with. One undo step; returns the new Dense's id, or -1
  // with *why.
  NodeId replaceHead(NodeId keep, int classes, QString* why = nullptr);

  // Where a new layer goes when none was dropped: right of the selection
  // or of the right-most node.
  QPointF nextFreePosition() const;
  // Whether a layer placed with its corner at q would overlap one.
  bool spotTaken(QPointF q) const;
  // The status line after a Flatten was inserted between src and dst.
  QString flattenNote(NodeId flat, NodeId src, NodeId dst) const;

  void deleteSelection();
  void selectAll();
  // Copies the selected nodes and the edges among them, as JSON.
  bool copySelection();
  void cutSelection();
  // Pastes clipboard nodes with fresh ids and names, offset from the
  // originals, and selects them. Returns the new ids.
  std::vector<NodeId> paste();
  // Left to right; wrapped into rows when one line would be too small to
  // read on a canvas of this size in pixels (empty: never wrapped).
  void autoLayout(QSizeF canvas = {});
  // Auto-layout (one undo step) when the nodes stand in one line too long
  // to read on this canvas once fitted; true when it moved them.
  bool wrapLongLine(QSizeF canvas);

  // Blocks (deepcanvas/blocks.h), each one undo step; false or -1, with
  // *why, when refused (the graph is then unchanged).
  // The selection becomes one Block node of a new definition `name`.
  NodeId groupSelection(const QString& name, QString* why = nullptr);
  // Expands a Block node back into its layers, selected afterwards.
  bool ungroup(NodeId block, QString* why = nullptr);
  // Stacks `count` instances of a one-input Block node in a chain.
  bool repeatBlock(NodeId block, int count, QString* why = nullptr);
  bool renameBlockDefinition(const QString& from, const QString& to, QString* why = nullptr);
  // Gives definition d.name new layers: every instance changes (an edit
  // inside a block).
  bool setBlockDefinition(const BlockDef& d, QString* why = nullptr);

  // Opening a block (double-click, Enter) shows its definition's layers on
  // the canvas, each block input as an Input layer shaped as the instance's
  // input, so shapes stay live inside. Closing it (the breadcrumb, Esc)
  // writes the layers back into the definition: every instance changes.
  // Both are steps of the undo history, so undo walks back across them
  // into the block and out again.
  bool openBlock(NodeId block, QString* why = nullptr);
  bool closeBlock(QString* why = nullptr);
  int blockDepth() const { return int(frames_.size()); }
  // The open blocks' names, outermost first.
  QStringList openBlocks() const;
  // The project's graph: what the canvas shows, folded back into the
  // blocks it is inside (what saving and training use).
  Graph projectGraph() const;
  // Navigation's undo command restores a level; not for other callers.
  void setLevel(const EditorLevel& level);
  EditorLevel level() const;

 signals:
  void statusMessage(const QString& text);
  void levelChanged();  // a block was opened or closed

 private:
  bool push(QUndoCommand* c, QString* why);
  // Runs a block edit on a copy and pushes the result as one step.
  bool pushGraph(Graph after, const QString& text, QString* why);

  GraphModel* model_;
  QUndoStack* undo_;
  NodeScene* scene_;
  int paste_count_ = 0;
  std::vector<BlockFrame> frames_;
  bool status_shown_ = false;  // the last status message is up (not an empty one)
};

}  // namespace dc::widgets
