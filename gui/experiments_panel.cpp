// The Experiments tab: the space editor, the sweep's options and its run on
// a worker thread, Apply best. The trials table and the plots are in
// experiments_views.cpp.
#include "gui/experiments_panel.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/settings.h>

#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>
#include <filesystem>

#include "gui/project_context.h"
#include "qcustomplot.h"

namespace dc::gui {

namespace {

enum SpaceColumn { kName, kKind, kLow, kHigh, kChoices, kSpaceColumns };
const char* const kKinds[] = {"log", "float", "int", "choice"};

std::vector<std::string> toStd(const QStringList& l) {
  std::vector<std::string> v;
  for (const QString& s : l) v.push_back(s.toStdString());
  return v;
}

QLineEdit* cellEdit(QTableWidget* t, int row, int col) {
  return qobject_cast<QLineEdit*>(t->cellWidget(row, col));
}

}  // namespace

ExperimentsPanel::ExperimentsPanel(ProjectContext* ctx, QWidget* parent)
    : QWidget(parent), ctx_(ctx) {
  buildUi();
  // The user's last space and options (per machine; the state file is per project).
  QSettings s;
  const QStringList specs = s.value("experiments/space").toStringList();
  setSpace(specs.isEmpty() ? QStringList{"lr=log:3e-4:1e-2", "batch=choice:32,64,128"} : specs);
  SweepOptions o;
  o.trials = s.value("experiments/trials", 16).toInt();
  o.epochs = s.value("experiments/epochs", 3).toInt();
  o.tpe = s.value("experiments/sampler", "tpe").toString() == "tpe";
  o.asha = s.value("experiments/pruner", "asha").toString() == "asha";
  o.seed = s.value("experiments/seed", 0).toULongLong();
  o.parallel = s.value("experiments/parallel", 1).toInt();
  o.baseline = s.value("experiments/baseline", true).toBool();
  setOptions(o);
  // A new project (File > New, Open) has its own sweep, if any.
  connect(ctx_, &ProjectContext::projectReplaced, this, [this] {
    if (!running()) model_->reset({}, {});
  });
  updateButtons();
}

ExperimentsPanel::~ExperimentsPanel() {
  // The trials stay "running" in the state file and resume later.
  stop_flag_ = true;
  join();
}

void ExperimentsPanel::buildUi() {
  auto* root = new QHBoxLayout(this);
  auto* left = new QVBoxLayout;
  root->addLayout(left, 0);

  auto* space_title = new QLabel(tr("<b>Search space</b>"), this);
  left->addWidget(space_title);
  space_table_ = new QTableWidget(0, kSpaceColumns, this);
  space_table_->setObjectName("spaceTable");
  space_table_->setHorizontalHeaderLabels(
      {tr("Parameter"), tr("Kind"), tr("Low"), tr("High"), tr("Choices")});
  space_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  space_table_->horizontalHeader()->setStretchLastSection(true);
  space_table_->setColumnWidth(kName, 130);
  space_table_->setColumnWidth(kKind, 70);
  space_table_->setColumnWidth(kLow, 70);
  space_table_->setColumnWidth(kHigh, 70);
  space_table_->verticalHeader()->setVisible(false);
  space_table_->setMinimumWidth(470);
  space_table_->setToolTip(
      tr("Training settings (lr, batch, optimizer.momentum, ...) and layer attributes "
         "(conv1.filters) to vary; log ranges must be above 0"));
  left->addWidget(space_table_, 1);
  auto* rows = new QHBoxLayout;
  add_row_ = new QPushButton(tr("Add parameter"), this);
  add_row_->setToolTip(tr("Add a row to the search space"));
  remove_row_ = new QPushButton(tr("Remove"), this);
  remove_row_->setToolTip(tr("Remove the selected row of the search space"));
  rows->addWidget(add_row_);
  rows->addWidget(remove_row_);
  rows->addStretch(1);
  left->addLayout(rows);
  connect(add_row_, &QPushButton::clicked, this, [this] {
    addSpaceRow();
    validate();
  });
  connect(remove_row_, &QPushButton::clicked, this, [this] {
    const int r = space_table_->currentRow();
    if (r >= 0) space_table_->removeRow(r);
    validate();
  });

  auto* form = new QFormLayout;
  trials_spin_ = new QSpinBox(this);
  trials_spin_->setRange(1, 100000);
  trials_spin_->setToolTip(tr("How many trials the sweep runs"));
  epochs_spin_ = new QSpinBox(this);
  epochs_spin_->setRange(1, 100000);
  epochs_spin_->setToolTip(tr("Epochs per trial (ASHA stops poor trials earlier)"));
  sampler_ = new QComboBox(this);
  sampler_->addItem(tr("TPE"), "tpe");
  sampler_->addItem(tr("Random"), "random");
  sampler_->setToolTip(tr("TPE proposes points near the good ones found so far"));
  pruner_ = new QComboBox(this);
  pruner_->addItem(tr("ASHA"), "asha");
  pruner_->addItem(tr("None"), "none");
  pruner_->setToolTip(tr("ASHA stops trials whose validation accuracy trails at an epoch rung"));
  seed_edit_ = new QLineEdit(this);
  seed_edit_->setObjectName("sweepSeed");
  // Any unsigned 64-bit seed, as the CLI's --seed takes (a spin box stops at
  // 2^31 - 1); too large a number is refused when the sweep starts.
  seed_edit_->setValidator(
      new QRegularExpressionValidator(QRegularExpression("[0-9]{1,20}"), seed_edit_));
  seed_edit_->setToolTip(
      tr("The sampler's seed (0 to 18446744073709551615); every trial "
         "trains with the project's seed"));
  parallel_spin_ = new QSpinBox(this);
  parallel_spin_->setRange(1, 64);
  parallel_spin_->setToolTip(tr("Trials at once (CPU; each then uses one thread)"));
  form->addRow(tr("Trials"), trials_spin_);
  form->addRow(tr("Epochs per trial"), epochs_spin_);
  form->addRow(tr("Sampler"), sampler_);
  form->addRow(tr("Pruner"), pruner_);
  form->addRow(tr("Seed"), seed_edit_);
  form->addRow(tr("Parallel"), parallel_spin_);
  baseline_check_ = new QCheckBox(tr("Trial 0: the project's own values"), this);
  baseline_check_->setObjectName("sweepBaseline");
  baseline_check_->setToolTip(
      tr("Train the project's current values of the parameters first, so the sweep's best is "
         "never a setting that validates worse than what you have"));
  form->addRow(QString(), baseline_check_);
  left->addLayout(form);

  auto* buttons = new QHBoxLayout;
  start_ = new QPushButton(tr("Start"), this);
  start_->setObjectName("sweepStart");
  start_->setToolTip(tr("Start a new sweep (Ctrl+Shift+E)"));
  start_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName("sweepStop");
  stop_->setToolTip(tr("Stop the sweep; Resume continues it, also after a restart"));
  resume_ = new QPushButton(tr("Resume"), this);
  resume_->setObjectName("sweepResume");
  resume_->setToolTip(tr("Continue the sweep saved beside the project (PROJECT.sweep.json)"));
  apply_ = new QPushButton(tr("Apply best"), this);
  apply_->setObjectName("sweepApplyBest");
  apply_->setToolTip(
      tr("Write the best trial's settings and layer attributes into the project (Ctrl+Z undoes)"));
  for (QPushButton* b : {start_, stop_, resume_, apply_}) buttons->addWidget(b);
  left->addLayout(buttons);
  connect(start_, &QPushButton::clicked, this, [this] { start(); });
  connect(stop_, &QPushButton::clicked, this, [this] { stop(); });
  connect(resume_, &QPushButton::clicked, this, [this] { resume(); });
  connect(apply_, &QPushButton::clicked, this, [this] { applyBest(); });

  message_ = new QLabel(this);
  message_->setObjectName("sweepMessage");
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  left->addWidget(message_);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  left->addWidget(summary_);

  auto* right = new QSplitter(Qt::Vertical, this);
  root->addWidget(right, 1);
  model_ = new TrialsModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::UserRole);
  view_ = new QTableView(right);
  view_->setObjectName("trialsTable");
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(0, Qt::AscendingOrder);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->verticalHeader()->setVisible(false);
  view_->horizontalHeader()->setStretchLastSection(true);
  right->addWidget(view_);
  auto* plots = new QSplitter(Qt::Horizontal, right);
  parallel_ = new QCustomPlot(plots);
  parallel_->setObjectName("parallelCoordinates");
  parallel_->setMinimumHeight(220);
  curves_ = new QCustomPlot(plots);
  curves_->setObjectName("trialCurves");
  plots->addWidget(parallel_);
  plots->addWidget(curves_);
  plots->setStretchFactor(0, 3);
  plots->setStretchFactor(1, 2);
  right->addWidget(plots);
  // The plots need the height more than the table, which scrolls.
  right->setSizes({220, 420});

  for (QSpinBox* s : {trials_spin_, epochs_spin_, parallel_spin_})
    connect(s, &QSpinBox::valueChanged, this, [this] { updateButtons(); });
  connect(seed_edit_, &QLineEdit::textChanged, this, [this] { updateButtons(); });
  for (QComboBox* c : {sampler_, pruner_})
    connect(c, &QComboBox::currentIndexChanged, this, [this] { updateButtons(); });
}

QStringList ExperimentsPanel::completions() const {
  QStringList names;
  for (const SettingSpec& s : training_settings()) {
    names << QString::fromStdString(s.attr.name);
    if (!s.flag.empty()) names << QString::fromStdString(s.flag);
  }
  const Project project = currentProject();
  for (const auto& [id, n] : project.graph.nodes())
    for (const auto& [attr, v] : n.attrs.values())
      names << QString::fromStdString(n.name + "." + attr);
  names.removeDuplicates();
  names.sort();
  return names;
}

void ExperimentsPanel::addSpaceRow(const QString& spec) {
  const int row = space_table_->rowCount();
  space_table_->insertRow(row);
  QString name = spec.section('=', 0, 0), rest = spec.section('=', 1);
  const QString kind = rest.section(':', 0, 0);
  const QString args = rest.section(':', 1);
  auto* name_edit = new QLineEdit(name, space_table_);
  name_edit->setPlaceholderText(tr("lr, batch, conv1.filters"));
  auto* completer = new QCompleter(completions(), name_edit);
  completer->setCaseSensitivity(Qt::CaseInsensitive);
  completer->setFilterMode(Qt::MatchContains);
  name_edit->setCompleter(completer);
  space_table_->setCellWidget(row, kName, name_edit);
  auto* kind_box = new QComboBox(space_table_);
  for (const char* k : kKinds) kind_box->addItem(k);
  kind_box->setCurrentText(kind.isEmpty() ? "log" : kind);
  space_table_->setCellWidget(row, kKind, kind_box);
  const bool choice = kind == "choice";
  const QStringList values = {choice ? "" : args.section(':', 0, 0),
                              choice ? "" : args.section(':', 1), choice ? args : ""};
  const int cols[] = {kLow, kHigh, kChoices};
  for (int i = 0; i < 3; ++i) {
    auto* e = new QLineEdit(values[i], space_table_);
    space_table_->setCellWidget(row, cols[i], e);
    connect(e, &QLineEdit::textEdited, this, [this] { validate(); });
  }
  connect(name_edit, &QLineEdit::textChanged, this, [this] { validate(); });
  connect(kind_box, &QComboBox::currentIndexChanged, this, [this, kind_box] {
    for (int r = 0; r < space_table_->rowCount(); ++r)
      if (space_table_->cellWidget(r, kKind) == kind_box) updateKindRow(r);
    validate();
  });
  updateKindRow(row);
}

void ExperimentsPanel::updateKindRow(int row) {
  const bool choice =
      qobject_cast<QComboBox*>(space_table_->cellWidget(row, kKind))->currentText() == "choice";
  // Hints only in the cells that apply: a greyed "32,64,128" beside a log
  // range would read as part of it.
  const std::pair<int, const char*> cells[] = {
      {kLow, "1e-4"}, {kHigh, "1e-2"}, {kChoices, "32,64,128"}};
  for (const auto& [col, hint] : cells) {
    const bool on = (col == kChoices) == choice;
    QLineEdit* e = cellEdit(space_table_, row, col);
    e->setEnabled(on);
    e->setPlaceholderText(on ? QString(hint) : QString());
  }
}

void ExperimentsPanel::setSpace(const QStringList& specs) {
  space_table_->setRowCount(0);
  for (const QString& s : specs) addSpaceRow(s);
  validate();
}

QStringList ExperimentsPanel::specs() const {
  QStringList out;
  for (int r = 0; r < space_table_->rowCount(); ++r) {
    const QString name = cellEdit(space_table_, r, kName)->text().trimmed();
    const QString kind =
        qobject_cast<QComboBox*>(space_table_->cellWidget(r, kKind))->currentText();
    const QString args = kind == "choice"
                             ? cellEdit(space_table_, r, kChoices)->text().remove(' ')
                             : cellEdit(space_table_, r, kLow)->text().trimmed() + ":" +
                                   cellEdit(space_table_, r, kHigh)->text().trimmed();
    out << name + "=" + kind + ":" + args;
  }
  return out;
}

QString ExperimentsPanel::validate() {
  const QStringList s = specs();
  const Graph g = currentProject().graph;
  QString error;
  if (s.isEmpty()) error = tr("Add at least one parameter to the search space.");
  for (int r = 0; r < s.size() && error.isEmpty(); ++r) {
    try {
      parse_search_param(s[r].toStdString(), g);
    } catch (const std::exception& e) {
      // The engine's message, as the CLI prints it, without the CLI's flag.
      QString m = QString::fromUtf8(e.what());
      if (m.startsWith("--param ")) m = m.mid(8);
      error = tr("Row %1: %2").arg(r + 1).arg(m);
    }
  }
  if (error.isEmpty()) {
    try {
      // Two rows for one target: the engine's message names the later row.
      parse_search_space(toStd(s), g);
    } catch (const std::exception& e) {
      QString m = QString::fromUtf8(e.what());
      if (m.startsWith("--param ")) m = m.mid(8);
      for (int r = int(s.size()) - 1; r >= 0; --r)
        if (m.startsWith(s[r] + ":")) {
          error = tr("Row %1: %2").arg(r + 1).arg(m);
          break;
        }
      if (error.isEmpty()) error = m;
    }
  }
  setMessage(error, !error.isEmpty());
  updateButtons();
  return error;
}

void ExperimentsPanel::setOptions(const SweepOptions& o) {
  trials_spin_->setValue(o.trials);
  epochs_spin_->setValue(o.epochs);
  sampler_->setCurrentIndex(o.tpe ? 0 : 1);
  pruner_->setCurrentIndex(o.asha ? 0 : 1);
  seed_edit_->setText(QString::number(qulonglong(o.seed)));
  parallel_spin_->setValue(o.parallel);
  baseline_check_->setChecked(o.baseline);
}

namespace {

// The fields the tab shows, over `o`: the rest stay as they are.
SweepOptions withVisible(SweepOptions o, int trials, int epochs, bool tpe, bool asha, uint64_t seed,
                         int parallel) {
  o.trials = trials;
  o.epochs = epochs;
  o.tpe = tpe;
  o.asha = asha;
  o.seed = seed;
  o.parallel = parallel;
  return o;
}

}  // namespace

SweepOptions ExperimentsPanel::options() const {
  // A new sweep: the engine's defaults for what the tab does not show.
  SweepOptions base;
  base.steps_per_epoch_limit = steps_limit_;
  base.baseline = baseline_check_->isChecked();
  return withVisible(base, trials_spin_->value(), epochs_spin_->value(),
                     sampler_->currentData().toString() == "tpe",
                     pruner_->currentData().toString() == "asha", seed_edit_->text().toULongLong(),
                     parallel_spin_->value());
}

SweepOptions ExperimentsPanel::resumeOptions() const {
  if (!loaded_) return options();
  const SweepOptions v = options();
  return withVisible(*loaded_, v.trials, v.epochs, v.tpe, v.asha, v.seed, v.parallel);
}

QString ExperimentsPanel::resumeMismatch(const SweepOptions& o) const {
  // The engine's own message names the CLI's flags; the app says what
  // differs in the tab's terms.
  if (state_path_.isEmpty() || !QFileInfo::exists(state_path_)) return {};
  SweepState old;
  try {
    const std::string p = state_path_.toStdString();
    old = load_sweep_state(p);
  } catch (const std::exception&) {
    return {};  // the engine reports an unreadable file
  }
  QStringList d;
  const QStringList space = specs();
  QStringList saved;
  for (const std::string& x : old.space) saved << QString::fromStdString(x);
  // Compared as parsed, so "1e-3" and "0.001" are the same bound.
  try {
    const SearchSpace now = parse_search_space(toStd(space), currentProject().graph);
    QStringList texts;
    for (const SearchParam& p : now.params) texts << QString::fromStdString(p.spec_text());
    if (texts != saved) d << tr("search space (%1 there)").arg(saved.join(", "));
  } catch (const std::exception&) {
    // validate() has reported the row already
  }
  const SweepOptions& a = old.options;
  auto num = [&](const QString& name, auto there, auto here) {
    if (there != here) d << tr("%1 (%2 there, %3 here)").arg(name).arg(there).arg(here);
  };
  num(tr("trials"), a.trials, o.trials);
  num(tr("epochs per trial"), a.epochs, o.epochs);
  if (a.tpe != o.tpe) d << tr("sampler");
  if (a.asha != o.asha) d << tr("pruner");
  num(tr("seed"), qulonglong(a.seed), qulonglong(o.seed));
  num(tr("ASHA eta"), a.eta, o.eta);
  // The file holds it resolved (0 is epochs / eta^2).
  num(tr("ASHA's first rung (epochs)"), sweep_min_epochs(a), sweep_min_epochs(o));
  num(tr("validation split"), a.val_split, o.val_split);
  num(tr("steps per epoch"), qlonglong(a.steps_per_epoch_limit),
      qlonglong(o.steps_per_epoch_limit));
  num(tr("TPE start-up trials"), a.n_startup, o.n_startup);
  if (d.isEmpty()) return {};
  return tr("The sweep in %1 was run with other settings: %2. Set them back to resume it; Start "
            "replaces it with a new sweep.")
      .arg(QFileInfo(state_path_).fileName())
      .arg(d.join("; "));
}

Project ExperimentsPanel::currentProject() const {
  return project_source_ ? project_source_() : ctx_->project();
}

void ExperimentsPanel::setProjectFile(const QString& path) {
  if (running()) return;  // the running sweep keeps its file
  file_ = path;
  // Another project's sweep: none of this one's hidden options carry over.
  steps_limit_ = 0;
  loaded_.reset();
  state_path_ =
      path.isEmpty() ? QString() : QString::fromStdString(sweep_state_path(path.toStdString()));
  model_->reset({}, {});
  loadState();
  refreshPlots();
  updateButtons();
}

void ExperimentsPanel::loadState() {
  if (state_path_.isEmpty() || !QFileInfo::exists(state_path_)) return;
  try {
    const std::string p = state_path_.toStdString();
    SweepState s = load_sweep_state(p);
    QStringList specs;
    for (const std::string& x : s.space) specs << QString::fromStdString(x);
    setSpace(specs);
    loaded_ = s.options;
    setOptions(s.options);
    const SearchSpace space =
        parse_search_space(std::vector<std::string>(s.space), currentProject().graph);
    check_sweep_points(s, space, p);
    model_->reset(space, s.trials);
    setMessage(tr("%1 of %2 trials done in %3; Resume continues the sweep.")
                   .arg(std::count_if(s.trials.begin(), s.trials.end(),
                                      [](const Trial& t) {
                                        return t.status != Trial::Status::Running &&
                                               t.status != Trial::Status::Pending;
                                      }))
                   .arg(s.options.trials)
                   .arg(QFileInfo(state_path_).fileName()),
               false);
  } catch (const std::exception& e) {
    setMessage(QString::fromUtf8(e.what()), true);
  }
}

bool ExperimentsPanel::canResume() const {
  if (state_path_.isEmpty() || !QFileInfo::exists(state_path_)) return false;
  const auto& t = model_->trials();
  const int done = int(std::count_if(t.begin(), t.end(), [](const Trial& x) {
    return x.status != Trial::Status::Running && x.status != Trial::Status::Pending;
  }));
  return done < trials_spin_->value() || t.empty();
}

bool ExperimentsPanel::start() {
  if (running()) return false;
  const auto& t = model_->trials();
  if (!t.empty() && !state_path_.isEmpty() && QFileInfo::exists(state_path_)) {
    const QString q = tr("Start a new sweep? The %1 trials in %2 are replaced.")
                          .arg(t.size())
                          .arg(QFileInfo(state_path_).fileName());
    const bool yes = confirm_ ? confirm_(q)
                              : QMessageBox::question(this, tr("New sweep"), q) == QMessageBox::Yes;
    if (!yes) return false;
  }
  return launch(true);
}

bool ExperimentsPanel::resume() {
  if (running()) return false;
  return launch(false);
}

bool ExperimentsPanel::launch(bool fresh) {
  if (!validate().isEmpty()) return false;
  if (start_blocker_) {
    if (const QString why = start_blocker_(); !why.isEmpty()) {
      setMessage(why, true);
      return false;
    }
  }
  // Both would train on the same cores (or GPU) and slow each other down.
  if (ctx_->busyWith(ProjectContext::BusyOwner::Training)) {
    setMessage(tr("A training run is in progress in the Training tab. Stop it there before "
                  "starting a sweep."),
               true);
    return false;
  }
  const Project p = currentProject();
  if (!ctx_->hasDataset()) {
    try {
      ctx_->loadDataset(ctx_->datasetSource());
    } catch (const std::exception& e) {
      setMessage(tr("The sweep needs the project's data: %1. Choose a dataset in the Dataset tab.")
                     .arg(QString::fromUtf8(e.what())),
                 true);
      return false;
    }
  }
  const QStringList problems = ctx_->trainingProblems(p.training);
  if (!problems.isEmpty()) {
    setMessage(problems.join("\n"), true);
    return false;
  }
  bool seed_ok = false;
  seed_edit_->text().toULongLong(&seed_ok);
  if (!seed_ok) {  // empty, or above 2^64 - 1
    setMessage(tr("The seed must be a whole number from 0 to 18446744073709551615."), true);
    return false;
  }
  try {
    const QStringList s = specs();
    SearchSpace space = parse_search_space(toStd(s), p.graph);
    // No test split (test fraction 0): an empty test set, as the CLI's sweep
    // has; trials validate on their split of the training set.
    auto data = std::make_shared<const TrainTest>(
        TrainTest{*ctx_->trainSet(), ctx_->testSet() ? *ctx_->testSet() : Dataset{}});
    SweepOptions o = fresh ? options() : resumeOptions();
    if (!fresh) {
      if (const QString m = resumeMismatch(o); !m.isEmpty()) {
        setMessage(m, true);
        return false;
      }
    }
    if (p.training.device.cuda) o.parallel = 1;  // the engine runs CUDA trials one at a time
    sweep_ =
        std::make_unique<Sweep>(p, data, std::move(space), o, state_path_.toStdString(), fresh);
    loaded_ = o;  // the state file's options from now on
  } catch (const std::exception& e) {
    setMessage(QString::fromUtf8(e.what()), true);
    return false;
  }
  {
    const SweepState st = sweep_->state();
    model_->reset(sweep_->space(), st.trials);
  }
  saveUiSettings();
  join();
  stop_flag_ = false;
  finished_ = false;
  worker_error_.clear();
  QString running_text = sweep_->resumed() ? tr("Resuming the sweep…") : tr("Sweep running…");
  if (const std::string why = sweep_->state().baseline_skipped; !why.empty())
    running_text += QLatin1Char(' ') +
                    tr("No baseline trial: the project's %1.").arg(QString::fromStdString(why));
  setMessage(running_text, false);
  Sweep* sweep = sweep_.get();
  const int gen = ++generation_;
  worker_ = std::thread([this, sweep, gen] {
    QString error;
    try {
      // Each update is a copy, shown on the GUI thread; the context object
      // (this) drops them when the panel is gone.
      sweep->run(
          [this, gen](const Trial& t) {
            QMetaObject::invokeMethod(
                this,
                [this, t, gen] {
                  if (gen == generation_) onTrial(t);
                },
                Qt::QueuedConnection);
          },
          &stop_flag_);
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    worker_error_ = error;  // for stopAndWait(), which reads it after the join
    QMetaObject::invokeMethod(
        this,
        [this, error, gen] {
          if (gen == generation_ && !finished_) onFinished(error);
        },
        Qt::QueuedConnection);
  });
  // After the worker exists: busyChanged's receivers ask running().
  ctx_->setBusy(ProjectContext::BusyOwner::Sweep, true);
  updateButtons();
  return true;
}

void ExperimentsPanel::stop() {
  if (!running()) return;
  stop_flag_ = true;
  setMessage(tr("Stopping: the running trials end at their next step and resume later…"), false);
}

void ExperimentsPanel::stopAndWait() {
  if (!running()) return;
  stop_flag_ = true;
  join();
  // At once rather than queued: the caller replaces the project next, which
  // the busy flag would refuse. The worker's queued report is dropped.
  onFinished(worker_error_);
}

void ExperimentsPanel::join() {
  if (worker_.joinable()) worker_.join();
}

void ExperimentsPanel::onTrial(const Trial& t) {
  model_->update(t);
  refreshPlots();
  Q_EMIT trialUpdated(t.id);
}

void ExperimentsPanel::onFinished(const QString& error) {
  join();
  finished_ = true;
  ctx_->setBusy(ProjectContext::BusyOwner::Sweep, false);
  const SweepState s = sweep_->state();
  model_->reset(sweep_->space(), s.trials);
  refreshPlots();
  int counts[5] = {};
  for (const Trial& t : s.trials) ++counts[int(t.status)];
  const bool complete =
      error.isEmpty() && !stop_flag_ &&
      counts[int(Trial::Status::Running)] + counts[int(Trial::Status::Pending)] == 0 &&
      int(s.trials.size()) >= s.options.trials;
  QString text;
  if (!error.isEmpty()) {
    text = tr("The sweep stopped: %1").arg(error);
  } else {
    text = (complete ? tr("Sweep finished: ") : tr("Sweep stopped; Resume continues it: ")) +
           tr("%1 completed, %2 pruned, %3 failed, %4 epochs trained.")
               .arg(counts[int(Trial::Status::Completed)])
               .arg(counts[int(Trial::Status::Pruned)])
               .arg(counts[int(Trial::Status::Failed)])
               .arg(s.epochs_used(), 0, 'g', 4);
    for (const Trial& t : s.trials)
      if (t.status == Trial::Status::Failed)
        text += "\n" + tr("Trial %1 failed: %2").arg(t.id).arg(QString::fromStdString(t.error));
  }
  setMessage(text, !error.isEmpty());
  Q_EMIT message(text.section('\n', 0, 0));
  updateButtons();
  Q_EMIT finished(complete);
}

bool ExperimentsPanel::applyBest() {
  if (running()) {
    setMessage(tr("Wait for the sweep to finish, or stop it, before applying its best trial."),
               true);
    return false;
  }
  const std::vector<Trial>& trials = model_->trials();
  SweepState s;
  s.trials = trials;
  const int b = s.best();
  if (b < 0) {
    setMessage(tr("No trial has completed yet: nothing to apply."), true);
    return false;
  }
  // Sweep::apply_best's values, one by one, so the editor and the Training
  // tab can each take theirs as part of one undo step.
  std::vector<BestValue> values;
  const SearchSpace& space = model_->space();
  const Trial& t = trials[size_t(b)];
  for (size_t i = 0; i < space.params.size(); ++i) {
    const SearchParam& p = space.params[i];
    BestValue v;
    if (p.setting) {
      v.setting = p.setting->attr.name;
    } else {
      v.node = p.node;
      v.attr = p.attr;
    }
    v.value = search_value(p, t.x[i]);
    values.push_back(v);
  }
  const QString what = tr("Apply best trial %1").arg(t.id);
  const QString why =
      applier_ ? applier_(values, what) : tr("There is no project editor to apply the values to.");
  if (!why.isEmpty()) {
    setMessage(tr("Apply best failed: %1").arg(why), true);
    return false;
  }
  setMessage(tr("Applied trial %1 (%2 % validation accuracy); Ctrl+Z undoes it.")
                 .arg(t.id)
                 .arg(100 * best_val_accuracy(t), 0, 'f', 1),
             false);
  Q_EMIT message(message_->text());
  return true;
}

void ExperimentsPanel::updateButtons() {
  const bool run = running();
  const bool valid = message_->property("error").toBool() == false || run;
  start_->setEnabled(!run && valid);
  stop_->setEnabled(run && !stop_flag_);
  resume_->setEnabled(!run && canResume());
  SweepState s;
  s.trials = model_->trials();
  apply_->setEnabled(!run && s.best() >= 0);
  for (QWidget* w : std::initializer_list<QWidget*>{space_table_, trials_spin_, epochs_spin_,
                                                    sampler_, pruner_, seed_edit_, parallel_spin_,
                                                    baseline_check_, add_row_, remove_row_})
    w->setEnabled(!run);
}

void ExperimentsPanel::setMessage(const QString& text, bool error) {
  message_->setText(text);
  message_->setProperty("error", error);
  message_->setStyleSheet(error ? "color: #b00020;" : "");
}

QString ExperimentsPanel::messageText() const {
  return message_->text();
}

void ExperimentsPanel::saveUiSettings() const {
  QSettings s;
  s.setValue("experiments/space", specs());
  const SweepOptions o = options();
  s.setValue("experiments/trials", o.trials);
  s.setValue("experiments/epochs", o.epochs);
  s.setValue("experiments/sampler", o.tpe ? "tpe" : "random");
  s.setValue("experiments/pruner", o.asha ? "asha" : "none");
  s.setValue("experiments/seed", qulonglong(o.seed));
  s.setValue("experiments/parallel", o.parallel);
  s.setValue("experiments/baseline", o.baseline);
}

}  // namespace dc::gui
