#pragma once
// One QUndoCommand per user action on the graph. Commands hold plain data
// (nodes, edges, values) rather than pointers to items, so they survive the
// scene creating and destroying items, and undo restores the same node ids.
#include "widgets/graph_model.h"

#include <QPointF>
#include <QUndoCommand>
#include <map>
#include <vector>

namespace dc::widgets {

enum CommandId { kMoveCommandId = 1001, kSetAttrCommandId = 1002 };

// Adds nodes and the edges among them (palette drop, paste, templates).
class AddNodesCommand : public QUndoCommand {
 public:
  AddNodesCommand(GraphModel* m, std::vector<Node> nodes, std::vector<Edge> edges,
                  const QString& text);
  void redo() override;
  void undo() override;

 private:
  GraphModel* model_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
};

// Removes nodes (with every edge touching them) and further edges.
class RemoveItemsCommand : public QUndoCommand {
 public:
  RemoveItemsCommand(GraphModel* m, const std::vector<NodeId>& nodes,
                     const std::vector<Edge>& edges);
  void redo() override;
  void undo() override;

 private:
  GraphModel* model_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
};

class ConnectCommand : public QUndoCommand {
 public:
  ConnectCommand(GraphModel* m, Edge e);
  void redo() override;
  void undo() override;

 private:
  GraphModel* model_;
  Edge edge_;
};

// Moves nodes. Consecutive moves of the same nodes merge into one step, so a
// drag followed by fine adjustments undoes in one go; auto-layout does not
// merge (mergeable = false).
class MoveNodesCommand : public QUndoCommand {
 public:
  MoveNodesCommand(GraphModel* m, std::map<NodeId, QPointF> from, std::map<NodeId, QPointF> to,
                   bool mergeable, const QString& text);
  void redo() override;
  void undo() override;
  int id() const override { return mergeable_ ? kMoveCommandId : -1; }
  bool mergeWith(const QUndoCommand* other) override;

 private:
  void apply(const std::map<NodeId, QPointF>& pos);
  GraphModel* model_;
  std::map<NodeId, QPointF> from_, to_;
  bool mergeable_;
};

// Sets one attribute. When it lowers the number of input ports (Add/Concat
// "inputs"), the edges into the vanished ports go with it and come back on
// undo. Repeated edits of the same attribute merge.
class SetAttrCommand : public QUndoCommand {
 public:
  SetAttrCommand(GraphModel* m, NodeId id, std::string name, AttrValue value);
  void redo() override;
  void undo() override;
  int id() const override { return kSetAttrCommandId; }
  bool mergeWith(const QUndoCommand* other) override;

 private:
  GraphModel* model_;
  NodeId node_;
  std::string name_;
  AttrValue old_, new_;
  std::vector<Edge> dropped_;
};

// Freezes or unfreezes several nodes at once (Layer → Freeze/Unfreeze, the
// Properties panel's Trainable box): one undo step for the whole selection.
class SetTrainableCommand : public QUndoCommand {
 public:
  SetTrainableCommand(GraphModel* m, std::vector<NodeId> ids, bool trainable);
  void redo() override;
  void undo() override;

 private:
  GraphModel* model_;
  std::map<NodeId, bool> old_;
  bool new_;
};

class RenameCommand : public QUndoCommand {
 public:
  RenameCommand(GraphModel* m, NodeId id, std::string name);
  void redo() override;
  void undo() override;

 private:
  GraphModel* model_;
  NodeId node_;
  std::string old_, new_;
};

// Replaces the whole graph by another and back: the block edits (group,
// ungroup, repeat, a definition's rename or new layers), which change many
// nodes and every instance of a definition at once.
class ReplaceGraphCommand : public QUndoCommand {
 public:
  ReplaceGraphCommand(GraphModel* m, Graph after, const QString& text);
  void redo() override;
  void undo() override;

 private:
  GraphModel* model_;
  Graph before_, after_;
};

}  // namespace dc::widgets
