#pragma once
// The layer palette: every registered layer type grouped by category, with
// a search box and an icon per layer. Layers are dragged onto the canvas
// (MIME kLayerMimeType) or added with a double-click or Enter.
#include <QWidget>

class QLineEdit;
class QTreeWidget;
class QTreeWidgetItem;

namespace dc::widgets {

class LayerPalette : public QWidget {
  Q_OBJECT
 public:
  explicit LayerPalette(QWidget* parent = nullptr);

  // Shows only layers whose type, category or help mentions `text`.
  void setFilter(const QString& text);
  QTreeWidget* tree() const { return tree_; }
  QLineEdit* searchBox() const { return search_; }
  // The shown row Enter in the search box adds: an exact name, then a name
  // that starts with the text, then one that contains it, then the rest
  // (matches in the category or help); nullptr when nothing is shown.
  QTreeWidgetItem* bestMatch() const;
  // The palette row of a layer type (nullptr if unknown).
  QTreeWidgetItem* itemFor(const QString& type) const;

 signals:
  void layerActivated(const QString& type);

 private:
  QLineEdit* search_;
  QTreeWidget* tree_;
};

}  // namespace dc::widgets
