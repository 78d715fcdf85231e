#include "gui/problems_panel.h"

#include "widgets/graph_model.h"

#include <QApplication>
#include <QListWidget>
#include <QStyle>
#include <QVBoxLayout>

namespace dc::gui {

namespace {
constexpr int kIdRole = Qt::UserRole + 1;
}

ProblemsPanel::ProblemsPanel(widgets::GraphModel* model, QWidget* parent)
    : QWidget(parent), model_(model) {
  list_ = new QListWidget(this);
  list_->setObjectName("problemsList");
  list_->setFrameShape(QFrame::NoFrame);
  list_->setWordWrap(true);
  list_->setUniformItemSizes(false);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->addWidget(list_);
  connect(model_, &widgets::GraphModel::shapesChanged, this, &ProblemsPanel::refresh);
  auto activate = [this](QListWidgetItem* it) {
    int id = it->data(kIdRole).toInt();
    if (id > 0) Q_EMIT nodeActivated(id);
  };
  connect(list_, &QListWidget::itemClicked, this, activate);
  connect(list_, &QListWidget::itemActivated, this, activate);
  refresh();
}

int ProblemsPanel::count() const {
  int n = 0;
  for (int i = 0; i < list_->count(); ++i)
    if (list_->item(i)->data(kIdRole).toInt() >= 0) ++n;
  return n;
}

void ProblemsPanel::refresh() {
  const Graph& g = model_->graph();
  list_->clear();
  QIcon err = style()->standardIcon(QStyle::SP_MessageBoxCritical);
  QIcon warn = style()->standardIcon(QStyle::SP_MessageBoxWarning);
  auto add = [&](const QIcon& icon, const QString& text, int id) {
    auto* it = new QListWidgetItem(icon, text, list_);
    it->setData(kIdRole, id);
    it->setToolTip(text);
  };
  // Root causes first: a node whose own rule fails, then those that only
  // inherit a problem from upstream.
  std::vector<std::pair<NodeId, std::string>> own, inherited;
  for (const auto& [id, s] : model_->shapes())
    if (!s.ok())
      (s.error.find("has no valid shape") != std::string::npos ? inherited : own)
          .push_back({id, s.error});
  for (auto& [id, e] : own) add(err, QString::fromStdString(e), id);
  for (auto& [id, e] : inherited) add(warn, QString::fromStdString(e), id);
  if (!g.empty()) {
    auto ins = g.inputs();
    auto outs = g.outputs();
    if (ins.empty()) add(err, tr("The network has no Input layer"), 0);
    if (ins.size() > 1) add(err, tr("The network has more than one Input layer"), 0);
    if (outs.size() > 1) {
      QStringList names;
      for (NodeId id : outs) names << QString::fromStdString(g.node(id).name);
      add(warn,
          tr("The network has several outputs (%1); connect all but one").arg(names.join(", ")), 0);
    }
  }
  if (list_->count() == 0) {
    auto* it = new QListWidgetItem(style()->standardIcon(QStyle::SP_DialogApplyButton),
                                   g.empty() ? tr("No layers yet") : tr("No problems"), list_);
    it->setData(kIdRole, -1);
    it->setFlags(Qt::ItemIsEnabled);
  }
  Q_EMIT countChanged(count());
}

}  // namespace dc::gui
