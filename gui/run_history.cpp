#include "gui/run_history.h"

#include <QCheckBox>
#include <QHeaderView>
#include <QSignalBlocker>
#include <QTableWidget>
#include <QVBoxLayout>

#include "widgets/live_plot.h"

namespace dc::gui {

RunHistory::RunHistory(QWidget* parent) : QWidget(parent) {
  auto* hl = new QVBoxLayout(this);
  show_overlays_ =
      new QCheckBox(tr("Overlay earlier runs on the plots (tick each run below)"), this);
  show_overlays_->setChecked(true);
  table_ = new QTableWidget(0, kColumns, this);
  table_->setHorizontalHeaderLabels({tr("Run"), tr("Settings"), tr("Epochs"), tr("Train loss"),
                                     tr("Held-out accuracy"), tr("Result"), tr("Checkpoints")});
  table_->horizontalHeaderItem(kRun)->setToolTip(
      tr("Ticked runs are drawn on the plots, in the colour shown"));
  // Headers and values in full: columns fit their contents, the folder takes the rest.
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setTextElideMode(Qt::ElideLeft);  // a folder's end names the run
  hl->addWidget(show_overlays_);
  hl->addWidget(table_, 1);
  connect(show_overlays_, &QCheckBox::toggled, this, &RunHistory::overlaysToggled);
  connect(table_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* it) {
    if (it->column() != kRun || !(it->flags() & Qt::ItemIsUserCheckable)) return;
    Q_EMIT runVisibilityChanged(it->row() + 1, it->checkState() == Qt::Checked);
  });
}

int RunHistory::addRun(int run, const QString& settings, const QString& folder) {
  const int row = table_->rowCount();
  {
    const QSignalBlocker block(table_);  // the tick of a new row is not a user's choice
    // The previous run is an overlay now: its tick shows or hides it.
    if (QTableWidgetItem* prev = row > 0 ? table_->item(row - 1, kRun) : nullptr)
      prev->setFlags(prev->flags() | Qt::ItemIsUserCheckable);
    table_->insertRow(row);
    auto* item = new QTableWidgetItem(QString::number(run));
    item->setData(Qt::DecorationRole, widgets::LivePlot::runColor(run - 1));
    item->setCheckState(Qt::Checked);
    item->setFlags(item->flags() & ~Qt::ItemIsUserCheckable);  // drawn while it runs
    table_->setItem(row, kRun, item);
  }
  table_->setItem(row, kSettings, new QTableWidgetItem(settings));
  setLastCell(kResult, tr("running"));
  setLastCell(kFolder, folder);
  return row;
}

void RunHistory::setCell(int row, int column, const QString& text) {
  if (row < 0 || row >= table_->rowCount()) return;
  table_->setItem(row, column, new QTableWidgetItem(text));
}

void RunHistory::setLastCell(int column, const QString& text) {
  setCell(table_->rowCount() - 1, column, text);
}

int RunHistory::runOf(int row) const {
  const QTableWidgetItem* it = table_->item(row, kRun);
  return it ? it->text().toInt() : 0;
}

void RunHistory::clear() {
  table_->setRowCount(0);
}

}  // namespace dc::gui
