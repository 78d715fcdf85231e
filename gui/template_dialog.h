#pragma once
// New from Template: the bundled templates on the left, a live preview of
// the selected one (the same canvas, read-only) with its description and
// size on the right.
#include <QDialog>
#include <QString>
#include <memory>
#include <utility>
#include <vector>

class QLabel;
class QListWidget;

namespace dc {
struct Project;
}

namespace dc::widgets {
class GraphModel;
class NodeScene;
class NodeView;
}  // namespace dc::widgets

namespace dc::gui {

class TemplateDialog : public QDialog {
  Q_OBJECT
 public:
  explicit TemplateDialog(QWidget* parent = nullptr);
  static QString templateDir();
  // The bundled templates that load: (project name, file), by file name.
  static std::vector<std::pair<QString, QString>> templates();
  // "Transfer: <base> (frozen) + new head" for each base DeepCanvas can
  // fetch: (title, "transfer:<id>"), listed whether or not it is fetched.
  static std::vector<std::pair<QString, QString>> transferTemplates();
  // A template as a new project: a bundled file, or "transfer:<base id>"
  // (a frozen pretrained base + new head, built from the fetched base).
  // Throws dc::Error; for a base not fetched yet, saying how to fetch it.
  static Project loadTemplate(const QString& path);
  // The chosen template file ("" when none).
  QString selectedFile() const;
  QListWidget* list() const { return list_; }

 protected:
  // The preview is laid out for its final size.
  void showEvent(QShowEvent* e) override;

 private:
  void showPreview();

  QListWidget* list_;
  QLabel* info_;
  widgets::GraphModel* model_;
  widgets::NodeScene* scene_;
  widgets::NodeView* view_;
};

}  // namespace dc::gui
