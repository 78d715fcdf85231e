#include "gui/template_dialog.h"

#include "gui/format.h"
#include "widgets/graph_model.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>

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
  view_->setMinFitZoom(0.05);  // a preview shows the whole network
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

  QDir dir(templateDir());
  for (const QString& f : dir.entryList({"*.dcproj"}, QDir::Files, QDir::Name)) {
    QString path = dir.filePath(f);
    QString title = f;
    try {
      title = QString::fromStdString(load_project(path.toStdString()).name);
    } catch (const Error&) {
      continue;  // a broken template is not offered
    }
    auto* it = new QListWidgetItem(title, list_);
    it->setData(kFileRole, path);
    it->setToolTip(path);
  }
  connect(list_, &QListWidget::currentRowChanged, this, &TemplateDialog::showPreview);
  if (list_->count()) list_->setCurrentRow(0);
  buttons->button(QDialogButtonBox::Ok)->setEnabled(list_->count() > 0);
}

QString TemplateDialog::selectedFile() const {
  auto* it = list_->currentItem();
  return it ? it->data(kFileRole).toString() : QString();
}

void TemplateDialog::showPreview() {
  QString file = selectedFile();
  if (file.isEmpty()) return;
  try {
    Project p = load_project(file.toStdString());
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
    text +=
        tr("<br>Dataset: %1 · %2 epochs, batch %3, %4")
            .arg(QString::fromStdString(p.dataset.path.empty() ? p.dataset.kind : p.dataset.path))
            .arg(p.training.epochs)
            .arg(p.training.batch)
            .arg(QString(enum_name(p.training.optimizer.type)));
    info_->setText(text);
  } catch (const Error& e) {
    model_->reset(Graph{});
    info_->setText(QString::fromUtf8(e.what()).toHtmlEscaped());
  }
  // Fit once the view has its final size.
  QTimer::singleShot(0, view_, [this] { view_->fitAll(); });
  view_->fitAll();
}

}  // namespace dc::gui
