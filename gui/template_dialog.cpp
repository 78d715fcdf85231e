#include "gui/template_dialog.h"

#include "gui/format.h"
#include "widgets/auto_layout.h"
#include "widgets/graph_model.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/transfer.h>

#include <QDialogButtonBox>
#include <QDir>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

namespace dc::gui {

namespace {
constexpr int kFileRole = Qt::UserRole + 1;
}

QString TemplateDialog::templateDir() {
  return QString::fromStdString(resource_dir()) + "/resources/templates";
}

std::vector<std::pair<QString, QString>> TemplateDialog::templates() {
  std::vector<std::pair<QString, QString>> out;
  QDir dir(templateDir());
  for (const QString& f : dir.entryList({"*.dcproj"}, QDir::Files, QDir::Name)) {
    QString path = dir.filePath(f);
    try {
      out.emplace_back(QString::fromStdString(load_project(path.toStdString()).name), path);
    } catch (const Error&) {
      continue;  // a broken template is not offered
    }
  }
  return out;
}

std::vector<std::pair<QString, QString>> TemplateDialog::transferTemplates() {
  std::vector<std::pair<QString, QString>> out;
  for (const PretrainedBase& b : pretrained_bases())
    out.emplace_back(QStringLiteral("Transfer: %1 base (frozen) + new head")
                         .arg(QString::fromStdString(b.title.substr(0, b.title.find(" (")))),
                     QStringLiteral("transfer:") + QString::fromStdString(b.id));
  return out;
}

Project TemplateDialog::loadTemplate(const QString& path) {
  if (path.startsWith(QStringLiteral("transfer:")))
    return transfer_project(pretrained_base(path.mid(9).toStdString()), {});
  return load_project(path.toStdString());
}

TemplateDialog::TemplateDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("New from Template"));
  resize(1000, 560);
  list_ = new QListWidget(this);
  list_->setObjectName("templateList");
  list_->setMinimumWidth(300);
  list_->setWordWrap(true);
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_->setSpacing(2);
  model_ = new widgets::GraphModel(this);
  scene_ = new widgets::NodeScene(model_, this);
  scene_->setReadOnly(true);
  view_ = new widgets::NodeView(scene_, this);
  view_->setInteractive(false);
  view_->setFitOnResize(true);
  view_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  view_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  info_ = new QLabel(this);
  info_->setWordWrap(true);
  info_->setTextFormat(Qt::RichText);

  auto* right = new QWidget(this);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  rl->addWidget(view_, 1);
  rl->addWidget(info_);
  auto* split = new QSplitter(this);
  split->addWidget(list_);
  split->addWidget(right);
  split->setStretchFactor(1, 1);
  split->setSizes({300, 700});
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Create"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(list_, &QListWidget::itemDoubleClicked, this, &QDialog::accept);
  auto* lay = new QVBoxLayout(this);
  lay->addWidget(split, 1);
  lay->addWidget(buttons);

  // Transfer templates are built from a fetched base, so they are listed
  // whether or not it is there: the preview says how to fetch it.
  auto all = templates();
  for (auto& t : transferTemplates()) all.push_back(std::move(t));
  for (const auto& [title, path] : all) {
    auto* it = new QListWidgetItem(title, list_);
    it->setData(kFileRole, path);
    it->setToolTip(path.startsWith(QStringLiteral("transfer:"))
                       ? tr("A pretrained base, frozen, with a new classifier head")
                       : path);
  }
  connect(list_, &QListWidget::currentRowChanged, this, &TemplateDialog::showPreview);
  if (list_->count()) list_->setCurrentRow(0);
  buttons->button(QDialogButtonBox::Ok)->setEnabled(list_->count() > 0);
}

QString TemplateDialog::selectedFile() const {
  auto* it = list_->currentItem();
  return it ? it->data(kFileRole).toString() : QString();
}

void TemplateDialog::showEvent(QShowEvent* e) {
  QDialog::showEvent(e);
  showPreview();
}

void TemplateDialog::showPreview() {
  QString file = selectedFile();
  if (file.isEmpty()) return;
  auto* ok = findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
  ok->setEnabled(true);
  try {
    Project p = loadTemplate(file);
    // As New from Template will lay it out in the editor (rows for a long
    // line), at the preview's size.
    if (isVisible()) {
      const QSize preview = view_->viewport()->size();
      widgets::layOutToRead(p.graph, {double(preview.width()), double(preview.height())});
    }
    model_->reset(p.graph);
    QString text = QStringLiteral("<b>%1</b><br>%2 layers")
                       .arg(QString::fromStdString(p.name).toHtmlEscaped())
                       .arg(p.graph.nodes().size());
    try {
      Plan plan(p.graph, 1);
      text += tr(" · %1 parameters").arg(humanCount(double(plan.num_parameters())));
      text += tr(" · input %1 → output %2")
                  .arg(QString::fromStdString(plan.input_shape().str()),
                       QString::fromStdString(plan.output_shape().str()));
    } catch (const Error&) {
    }
    if (!p.training.init_weights.empty())
      text += tr("<br>Starts from %1 (frozen layers locked); the new head learns.")
                  .arg(QString::fromStdString(p.training.init_weights).toHtmlEscaped());
    text +=
        tr("<br>Dataset: %1 · %2 epochs, batch %3, %4")
            .arg(QString::fromStdString(p.dataset.path.empty() ? p.dataset.kind : p.dataset.path))
            .arg(p.training.epochs)
            .arg(p.training.batch)
            .arg(QString(enum_name(p.training.optimizer.type)));
    info_->setText(text);
  } catch (const Error& e) {
    // A transfer template without its base: say how to get it, and offer
    // nothing to create.
    model_->reset(Graph{});
    info_->setText(QString::fromUtf8(e.what()).toHtmlEscaped());
    ok->setEnabled(false);
  }
  // Fit once the view has its final size.
  QTimer::singleShot(0, view_, [this] { view_->fitAll(); });
  view_->fitAll();
}

}  // namespace dc::gui
