#include "widgets/block_breadcrumb.h"

#include "widgets/graph_editor.h"
#include "widgets/node_scene.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QShortcut>
#include <QToolButton>

namespace dc::widgets {

BlockBreadcrumb::BlockBreadcrumb(GraphEditor* editor, QWidget* view)
    : QFrame(view), editor_(editor), row_(new QHBoxLayout(this)) {
  setObjectName("blockBreadcrumb");
  setFrameShape(QFrame::StyledPanel);
  setAutoFillBackground(true);
  row_->setContentsMargins(6, 2, 6, 2);
  row_->setSpacing(2);
  row_->setSizeConstraint(QLayout::SetFixedSize);  // the bar is as wide as its parts
  move(8, 8);
  auto* out = new QShortcut(QKeySequence(Qt::Key_Escape), view);
  out->setContext(Qt::WidgetWithChildrenShortcut);
  connect(out, &QShortcut::activated, this, [this] {
    if (editor_->blockDepth() > 0) editor_->closeBlock();
  });
  for (auto key : {Qt::Key_Return, Qt::Key_Enter}) {
    auto* open = new QShortcut(QKeySequence(key), view);
    open->setContext(Qt::WidgetWithChildrenShortcut);
    connect(open, &QShortcut::activated, this, [this] {
      const auto sel = editor_->scene()->selectedNodes();
      if (sel.size() == 1) {
        const Node* n = editor_->graph().find(sel[0]);
        if (n && n->type == kBlockType) editor_->openBlock(sel[0]);
      }
    });
  }
  connect(editor_, &GraphEditor::levelChanged, this, &BlockBreadcrumb::rebuild);
  rebuild();
}

void BlockBreadcrumb::goTo(int depth) {
  while (editor_->blockDepth() > depth)
    if (!editor_->closeBlock()) break;  // the message says why
}

void BlockBreadcrumb::rebuild() {
  // Later: the clicked button may be the one whose signal got us here.
  while (QLayoutItem* i = row_->takeAt(0)) {
    if (QWidget* w = i->widget()) {
      w->hide();
      w->deleteLater();
    }
    delete i;
  }
  const QStringList names = editor_->openBlocks();
  setVisible(!names.isEmpty());
  if (names.isEmpty()) return;
  QStringList parts{tr("Project")};
  parts << names;
  for (int k = 0; k < parts.size(); ++k) {
    if (k > 0) {
      auto* sep = new QLabel(QStringLiteral("\u203a"), this);
      row_->addWidget(sep);
      sep->show();
    }
    auto* b = new QToolButton(this);
    b->setObjectName(QStringLiteral("breadcrumb%1").arg(k));
    b->setText(parts[k]);
    b->setAutoRaise(true);
    const bool current = k == parts.size() - 1;
    b->setEnabled(!current);
    if (current) {
      QFont f = b->font();
      f.setBold(true);
      b->setFont(f);
    } else {
      b->setToolTip(k == 0 ? tr("Back to the project (Esc goes out one level)")
                           : tr("Back to block %1").arg(parts[k]));
      connect(b, &QToolButton::clicked, this, [this, k] { goTo(k); });
    }
    row_->addWidget(b);
    b->show();  // a widget added to a shown parent stays hidden until shown
  }
  adjustSize();
  raise();
}

}  // namespace dc::widgets
