// The search-space editor's rows and their check against the engine's parser.
#include "gui/search_space_editor.h"

#include <deepcanvas/search_space.h>
#include <deepcanvas/settings.h>

#include <QComboBox>
#include <QCompleter>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace dc::gui {

namespace {

enum SpaceColumn { kName, kKind, kLow, kHigh, kChoices, kSpaceColumns };
const char* const kKinds[] = {"log", "float", "int", "choice"};

QLineEdit* cellEdit(QTableWidget* t, int row, int col) {
  return qobject_cast<QLineEdit*>(t->cellWidget(row, col));
}

QComboBox* kindBox(QTableWidget* t, int row) {
  return qobject_cast<QComboBox*>(t->cellWidget(row, kKind));
}

// The engine's reason in the app's words: the row's spec and why, without
// the CLI's "--param".
QString rowProblem(int row, const SearchSpaceError& e) {
  return QObject::tr("Row %1: %2: %3")
      .arg(row + 1)
      .arg(QString::fromStdString(e.spec()), QString::fromStdString(e.detail()));
}

}  // namespace

QStringList searchSpaceNames(const Graph& g) {
  QStringList names;
  for (const SettingSpec& s : training_settings()) {
    names << QString::fromStdString(s.attr.name);
    if (!s.flag.empty()) names << QString::fromStdString(s.flag);
  }
  for (const auto& [id, n] : g.nodes())
    for (const auto& [attr, v] : n.attrs.values())
      names << QString::fromStdString(n.name + "." + attr);
  names.removeDuplicates();
  names.sort();
  return names;
}

SearchSpaceEditor::SearchSpaceEditor(std::function<Graph()> graph, QWidget* parent)
    : QWidget(parent), graph_(std::move(graph)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(new QLabel(tr("<b>Search space</b>"), this));
  table_ = new QTableWidget(0, kSpaceColumns, this);
  table_->setObjectName("spaceTable");
  table_->setHorizontalHeaderLabels(
      {tr("Parameter"), tr("Kind"), tr("Low"), tr("High"), tr("Choices")});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setColumnWidth(kName, 130);
  table_->setColumnWidth(kKind, 70);
  table_->setColumnWidth(kLow, 70);
  table_->setColumnWidth(kHigh, 70);
  table_->verticalHeader()->setVisible(false);
  table_->setMinimumWidth(470);
  table_->setToolTip(
      tr("Training settings (lr, batch, optimizer.momentum, ...) and layer attributes "
         "(conv1.filters) to vary; log ranges must be above 0"));
  layout->addWidget(table_, 1);
  auto* rows = new QHBoxLayout;
  add_row_ = new QPushButton(tr("Add parameter"), this);
  add_row_->setToolTip(tr("Add a row to the search space"));
  remove_row_ = new QPushButton(tr("Remove"), this);
  remove_row_->setToolTip(tr("Remove the selected row of the search space"));
  rows->addWidget(add_row_);
  rows->addWidget(remove_row_);
  rows->addStretch(1);
  layout->addLayout(rows);
  connect(add_row_, &QPushButton::clicked, this, [this] {
    addRow();
    Q_EMIT edited();
  });
  connect(remove_row_, &QPushButton::clicked, this, [this] {
    const int r = table_->currentRow();
    if (r >= 0) table_->removeRow(r);
    Q_EMIT edited();
  });
}

void SearchSpaceEditor::setEditable(bool on) {
  for (QWidget* w : std::initializer_list<QWidget*>{table_, add_row_, remove_row_})
    w->setEnabled(on);
}

QStringList SearchSpaceEditor::completions() const {
  return searchSpaceNames(graph_());
}

void SearchSpaceEditor::addRow(const QString& spec) {
  const int row = table_->rowCount();
  table_->insertRow(row);
  QString name = spec.section('=', 0, 0), rest = spec.section('=', 1);
  const QString kind = rest.section(':', 0, 0);
  const QString args = rest.section(':', 1);
  auto* name_edit = new QLineEdit(name, table_);
  name_edit->setPlaceholderText(tr("lr, batch, conv1.filters"));
  auto* completer = new QCompleter(completions(), name_edit);
  completer->setCaseSensitivity(Qt::CaseInsensitive);
  completer->setFilterMode(Qt::MatchContains);
  name_edit->setCompleter(completer);
  table_->setCellWidget(row, kName, name_edit);
  auto* kind_box = new QComboBox(table_);
  for (const char* k : kKinds) kind_box->addItem(k);
  kind_box->setCurrentText(kind.isEmpty() ? "log" : kind);
  table_->setCellWidget(row, kKind, kind_box);
  const bool choice = kind == "choice";
  const QStringList values = {choice ? "" : args.section(':', 0, 0),
                              choice ? "" : args.section(':', 1), choice ? args : ""};
  const int cols[] = {kLow, kHigh, kChoices};
  for (int i = 0; i < 3; ++i) {
    auto* e = new QLineEdit(values[i], table_);
    table_->setCellWidget(row, cols[i], e);
    connect(e, &QLineEdit::textEdited, this, &SearchSpaceEditor::edited);
  }
  connect(name_edit, &QLineEdit::textChanged, this, &SearchSpaceEditor::edited);
  connect(kind_box, &QComboBox::currentIndexChanged, this, [this, kind_box] {
    for (int r = 0; r < table_->rowCount(); ++r)
      if (table_->cellWidget(r, kKind) == kind_box) updateKindRow(r);
    Q_EMIT edited();
  });
  updateKindRow(row);
}

void SearchSpaceEditor::updateKindRow(int row) {
  const bool choice = kindBox(table_, row)->currentText() == "choice";
  // Hints only in the cells that apply: a greyed "32,64,128" beside a log
  // range would read as part of it.
  const std::pair<int, const char*> cells[] = {
      {kLow, "1e-4"}, {kHigh, "1e-2"}, {kChoices, "32,64,128"}};
  for (const auto& [col, hint] : cells) {
    const bool on = (col == kChoices) == choice;
    QLineEdit* e = cellEdit(table_, row, col);
    e->setEnabled(on);
    e->setPlaceholderText(on ? QString(hint) : QString());
  }
}

void SearchSpaceEditor::setSpace(const QStringList& specs) {
  table_->setRowCount(0);
  for (const QString& s : specs) addRow(s);
}

QStringList SearchSpaceEditor::specs() const {
  QStringList out;
  for (int r = 0; r < table_->rowCount(); ++r) {
    const QString name = cellEdit(table_, r, kName)->text().trimmed();
    const QString kind = kindBox(table_, r)->currentText();
    const QString args = kind == "choice" ? cellEdit(table_, r, kChoices)->text().remove(' ')
                                          : cellEdit(table_, r, kLow)->text().trimmed() + ":" +
                                                cellEdit(table_, r, kHigh)->text().trimmed();
    out << name + "=" + kind + ":" + args;
  }
  return out;
}

QString SearchSpaceEditor::problem() const {
  const QStringList s = specs();
  if (s.isEmpty()) return tr("Add at least one parameter to the search space.");
  const Graph g = graph_();
  std::vector<std::string> all;
  // Each row alone first, so the first bad row is named even when a later
  // one repeats an earlier target.
  for (int r = 0; r < s.size(); ++r) {
    all.push_back(s[r].toStdString());
    try {
      parse_search_param(all.back(), g);
    } catch (const SearchSpaceError& e) {
      return rowProblem(r, e);
    } catch (const std::exception& e) {
      return tr("Row %1: %2").arg(r + 1).arg(QString::fromUtf8(e.what()));
    }
  }
  try {
    // Two rows for one target: the engine names the later row.
    parse_search_space(all, g);
  } catch (const SearchSpaceError& e) {
    if (e.index() >= 0) return rowProblem(e.index(), e);
    return QString::fromUtf8(e.what());
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

}  // namespace dc::gui
