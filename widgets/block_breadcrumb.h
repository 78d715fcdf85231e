#pragma once
// The bar over the canvas while a block is open: "Project › encoder", each
// part a button that goes back out to that level. Esc goes out one level,
// Enter opens the selected Block node. Hidden at the project's level.
#include <QFrame>

class QHBoxLayout;

namespace dc::widgets {

class GraphEditor;

class BlockBreadcrumb : public QFrame {
  Q_OBJECT
 public:
  // A child of the canvas `view`, in its top-left corner; the shortcuts
  // act while the view has the focus.
  BlockBreadcrumb(GraphEditor* editor, QWidget* view);

  // Goes out of the open blocks until `depth` remain (0: the project).
  void goTo(int depth);

 private:
  void rebuild();

  GraphEditor* editor_;
  QHBoxLayout* row_;
};

}  // namespace dc::widgets
