#include "widgets/layer_palette.h"

#include "widgets/layer_style.h"
#include "widgets/node_view.h"

#include <deepcanvas/blocks.h>
#include <deepcanvas/layer.h>

#include <QHeaderView>
#include <QKeyEvent>
#include <QLineEdit>
#include <QMimeData>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace dc::widgets {

namespace {

constexpr int kTypeRole = Qt::UserRole + 1;

// A tree whose layer rows drag out as kLayerMimeType.
class PaletteTree : public QTreeWidget {
 public:
  using QTreeWidget::QTreeWidget;

 protected:
  QStringList mimeTypes() const override { return {kLayerMimeType}; }
  QMimeData* mimeData(const QList<QTreeWidgetItem*>& items) const override {
    if (items.isEmpty() || items[0]->data(0, kTypeRole).toString().isEmpty()) return nullptr;
    auto* m = new QMimeData;
    m->setData(kLayerMimeType, items[0]->data(0, kTypeRole).toString().toUtf8());
    return m;
  }
};

// The order a user builds a network in, rather than alphabetical.
int categoryOrder(const std::string& c) {
  static const char* order[] = {"Input",      "Convolution",   "Pooling",        "Core",
                                "Activation", "Normalization", "Regularization", "Merge",
                                "Shape",      "Recurrent",     "Attention"};
  for (int i = 0; i < int(std::size(order)); ++i)
    if (c == order[i]) return i;
  return 100;
}

}  // namespace

LayerPalette::LayerPalette(QWidget* parent) : QWidget(parent) {
  register_builtin_layers();
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Search layers…"));
  search_->setClearButtonEnabled(true);
  search_->setObjectName("paletteSearch");
  tree_ = new PaletteTree(this);
  tree_->setObjectName("paletteTree");
  tree_->setHeaderHidden(true);
  tree_->setRootIsDecorated(false);
  tree_->setIndentation(8);
  tree_->setIconSize(QSize(20, 20));
  tree_->setDragEnabled(true);
  tree_->setDragDropMode(QAbstractItemView::DragOnly);
  tree_->setFrameShape(QFrame::NoFrame);
  tree_->setUniformRowHeights(true);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(6, 6, 6, 6);
  lay->setSpacing(6);
  lay->addWidget(search_);
  lay->addWidget(tree_);

  auto all = LayerRegistry::instance().all();
  std::stable_sort(all.begin(), all.end(), [](const LayerDescriptor* a, const LayerDescriptor* b) {
    return categoryOrder(a->category) < categoryOrder(b->category);
  });
  QTreeWidgetItem* group = nullptr;
  for (const LayerDescriptor* d : all) {
    // A Block comes from grouping layers (Edit > Group as Block), never empty.
    if (d->type == kBlockType) continue;
    QString cat = QString::fromStdString(d->category);
    if (!group || group->text(0) != cat) {
      group = new QTreeWidgetItem(tree_, {cat});
      QFont f = group->font(0);
      f.setBold(true);
      group->setFont(0, f);
      group->setForeground(0, palette().color(QPalette::PlaceholderText));
      group->setFlags(Qt::ItemIsEnabled);
      group->setExpanded(true);
    }
    auto* item = new QTreeWidgetItem(group, {QString::fromStdString(d->type)});
    item->setData(0, kTypeRole, QString::fromStdString(d->type));
    item->setIcon(0, layerIcon(QString::fromStdString(d->type)));
    item->setToolTip(0, QStringLiteral("<b>%1</b><br>%2")
                            .arg(QString::fromStdString(d->type),
                                 QString::fromStdString(d->help).toHtmlEscaped()));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled);
  }
  tree_->expandAll();

  connect(search_, &QLineEdit::textChanged, this, &LayerPalette::setFilter);
  connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* it) {
    QString type = it->data(0, kTypeRole).toString();
    if (!type.isEmpty()) Q_EMIT layerActivated(type);
  });
  // Enter in the search box adds the best match: palette-by-keyboard.
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    if (QTreeWidgetItem* it = bestMatch()) Q_EMIT layerActivated(it->data(0, kTypeRole).toString());
  });
}

QTreeWidgetItem* LayerPalette::bestMatch() const {
  // The first shown row in list order would make "relu" add GELU (a match in
  // its help text, and listed first): the name decides before the help does.
  const QString t = search_->text().trimmed();
  QTreeWidgetItem* best = nullptr;
  int best_rank = 4;
  for (int g = 0; g < tree_->topLevelItemCount(); ++g)
    for (int i = 0; i < tree_->topLevelItem(g)->childCount(); ++i) {
      QTreeWidgetItem* it = tree_->topLevelItem(g)->child(i);
      if (it->isHidden()) continue;
      const QString name = it->text(0);
      const int rank = name.compare(t, Qt::CaseInsensitive) == 0 ? 0
                       : name.startsWith(t, Qt::CaseInsensitive) ? 1
                       : name.contains(t, Qt::CaseInsensitive)   ? 2
                                                                 : 3;
      if (rank < best_rank) {
        best = it;
        best_rank = rank;
      }
    }
  return best;
}

QTreeWidgetItem* LayerPalette::itemFor(const QString& type) const {
  for (int g = 0; g < tree_->topLevelItemCount(); ++g)
    for (int i = 0; i < tree_->topLevelItem(g)->childCount(); ++i) {
      QTreeWidgetItem* it = tree_->topLevelItem(g)->child(i);
      if (it->data(0, kTypeRole).toString() == type) return it;
    }
  return nullptr;
}

void LayerPalette::setFilter(const QString& text) {
  QString t = text.trimmed();
  for (int g = 0; g < tree_->topLevelItemCount(); ++g) {
    QTreeWidgetItem* group = tree_->topLevelItem(g);
    bool any = false;
    bool group_match = group->text(0).contains(t, Qt::CaseInsensitive);
    for (int i = 0; i < group->childCount(); ++i) {
      QTreeWidgetItem* it = group->child(i);
      bool show = t.isEmpty() || group_match || it->text(0).contains(t, Qt::CaseInsensitive) ||
                  it->toolTip(0).contains(t, Qt::CaseInsensitive);
      it->setHidden(!show);
      any |= show;
    }
    group->setHidden(!any);
  }
  // The row Enter would add is the one highlighted.
  if (!t.isEmpty())
    if (QTreeWidgetItem* best = bestMatch()) tree_->setCurrentItem(best);
}

}  // namespace dc::widgets
