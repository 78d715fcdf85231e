#pragma once
// The property editor, generated from the selected layer's attribute schema:
// a spin box with the schema's range for integers, a double spin box for
// floats, a combo box for choices, a check box for booleans, two spin boxes
// for pairs such as a 3×3 kernel, and a line edit for lists. Help text is the
// tooltip. Every change goes through the GraphEditor, so it is undoable and
// revalidates the graph at once. A Trainable box under the name freezes the
// layer (Node::trainable), which is not a layer attribute.
#include <deepcanvas/graph.h>

#include <QWidget>
#include <functional>
#include <map>
#include <string>

class QCheckBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QScrollArea;

namespace dc::widgets {

class GraphEditor;

class PropertyEditor : public QWidget {
  Q_OBJECT
 public:
  explicit PropertyEditor(GraphEditor* editor, QWidget* parent = nullptr);

  // Shows a node (or nothing for -1). Normally follows the selection.
  void showNode(NodeId id);
  NodeId currentNode() const { return node_; }

 private:
  void rebuild();
  void syncValues();
  void syncShape();
  void onSelectionChanged();
  QWidget* makeEditor(const AttrSpec& spec);
  void commit(const std::string& name, const AttrValue& v);

  GraphEditor* editor_;
  NodeId node_ = -1;
  QScrollArea* scroll_;
  QWidget* body_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* shape_ = nullptr;
  QLineEdit* name_ = nullptr;
  QCheckBox* trainable_ = nullptr;
  std::map<std::string, std::function<void(const AttrValue&)>> setters_;
};

}  // namespace dc::widgets
