// The Experiments tab: its layout, Start/Resume/Stop, the state file and
// Apply best. The space editor is search_space_editor.cpp, the options form
// sweep_options_form.cpp, the worker sweep_runner.cpp, and the trials table
// and the plots experiments_views.cpp.
#include "gui/experiments_panel.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/run_log.h>
#include <deepcanvas/settings.h>
#include <deepcanvas/sweep_board.h>

#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QUndoStack>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "gui/project_context.h"
#include "gui/run_start.h"
#include "gui/search_space_editor.h"
#include "gui/sweep_options_form.h"
#include "gui/sweep_runner.h"
#include "qcustomplot.h"

namespace dc::gui {

namespace {

std::vector<std::string> toStd(const QStringList& l) {
  std::vector<std::string> v;
  for (const QString& s : l) v.push_back(s.toStdString());
  return v;
}

}  // namespace

QKeySequence ExperimentsPanel::startShortcut() {
  return QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E);
}

ExperimentsPanel::ExperimentsPanel(ProjectContext* ctx, QWidget* parent)
    : QWidget(parent), ctx_(ctx) {
  runner_ = new SweepRunner(this);
  connect(runner_, &SweepRunner::trialUpdated, this, &ExperimentsPanel::onTrial);
  connect(runner_, &SweepRunner::finished, this, &ExperimentsPanel::onFinished);
  connect(runner_, &SweepRunner::logProblem, this, [this](const QString& text) {
    setMessage(messageText() + QLatin1Char('\n') + text, message_->property("error").toBool());
  });
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
    if (running()) return;
    model_->reset({}, {});
    offered_trial_ = -1;  // the context dropped the offer with the project
  });
  updateButtons();
}

ExperimentsPanel::~ExperimentsPanel() {
  // The trials stay "running" in the state file and resume later.
  delete runner_;
  runner_ = nullptr;
}

void ExperimentsPanel::buildUi() {
  auto* root = new QHBoxLayout(this);
  auto* left = new QVBoxLayout;
  root->addLayout(left, 0);

  space_ = new SearchSpaceEditor([this] { return currentProject().graph; }, this);
  left->addWidget(space_, 1);
  connect(space_, &SearchSpaceEditor::edited, this, [this] { validate(); });
  form_ = new SweepOptionsForm(this);
  left->addWidget(form_);
  connect(form_, &SweepOptionsForm::changed, this, [this] { updateButtons(); });

  auto* buttons = new QHBoxLayout;
  start_ = new QPushButton(tr("Start"), this);
  start_->setObjectName("sweepStart");
  start_->setToolTip(
      tr("Start a new sweep (%1)").arg(startShortcut().toString(QKeySequence::NativeText)));
  start_->setShortcut(startShortcut());
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
}

QTableWidget* ExperimentsPanel::spaceTable() const {
  return space_->table();
}

QStringList ExperimentsPanel::completions() const {
  return space_->completions();
}

void ExperimentsPanel::setSpace(const QStringList& specs) {
  space_->setSpace(specs);
  validate();
}

QStringList ExperimentsPanel::specs() const {
  return space_->specs();
}

QString ExperimentsPanel::validate() {
  const QString error = space_->problem();
  setMessage(error, !error.isEmpty());
  updateButtons();
  return error;
}

void ExperimentsPanel::setOptions(const SweepOptions& o) {
  form_->setOptions(o);
}

SweepOptions ExperimentsPanel::options() const {
  // A new sweep: the engine's defaults for what the tab does not show.
  SweepOptions base;
  base.steps_per_epoch_limit = steps_limit_;
  return form_->options(base, true);
}

SweepOptions ExperimentsPanel::resumeOptions() const {
  if (!loaded_) return options();
  return form_->options(*loaded_, false);
}

QString ExperimentsPanel::resumeMismatch(const SweepOptions& o) const {
  // The engine words its differences with the CLI's flags; the app says
  // what differs in the tab's terms.
  if (state_path_.isEmpty() || !QFileInfo::exists(state_path_)) return {};
  SweepState old;
  try {
    const std::string p = state_path_.toStdString();
    old = load_sweep_state(p);
  } catch (const std::exception&) {
    return {};  // the engine reports an unreadable file
  }
  // Compared as parsed, so "1e-3" and "0.001" are the same bound.
  std::vector<std::string> space = old.space;
  try {
    space.clear();
    for (const SearchParam& p : parse_search_space(toStd(specs()), currentProject().graph).params)
      space.push_back(p.spec_text());
  } catch (const std::exception&) {
    space = old.space;  // validate() has reported the row already
  }
  QStringList d;
  for (const SweepDifference& x : sweep_differences(old, space, o)) d << sweepDifferenceText(x);
  if (d.isEmpty()) return {};
  return sweepMismatchText(state_path_, d);
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
  weights_path_ = state_path_.isEmpty()
                      ? QString()
                      : QString::fromStdString(sweep_weights_path(state_path_.toStdString()));
  model_->reset({}, {});
  offered_trial_ = -1;
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
    offerBestWeights(s);
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
    setMessage(sweepStateErrorText(e, state_path_), true);
  }
}

bool ExperimentsPanel::canResume() const {
  if (state_path_.isEmpty() || !QFileInfo::exists(state_path_)) return false;
  const auto& t = model_->trials();
  const int done = int(std::count_if(t.begin(), t.end(), [](const Trial& x) {
    return x.status != Trial::Status::Running && x.status != Trial::Status::Pending;
  }));
  return done < form_->trials() || t.empty();
}

bool ExperimentsPanel::running() const {
  return runner_ && runner_->running();
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
  const Project p = currentProject();
  SweepOptions o = fresh ? options() : resumeOptions();
  // Checked as a sweep, as the CLI's sweep is: its state file, and memory
  // for the trials that train at once (one at a time on CUDA, below).
  AppRunCheck sweep_check;
  sweep_check.purpose = RunPurpose::Sweep;
  sweep_check.state_file = state_path_.toStdString();
  sweep_check.concurrent = p.training.device.cuda ? 1 : std::max(1, o.parallel);
  // Memory for the sweep's largest batch, as the CLI checks it: the space
  // may range over the batch size. validate() has parsed the space already.
  const SearchParam* batch_param = nullptr;
  SearchSpace checked_space;
  try {
    checked_space = parse_search_space(toStd(specs()), p.graph);
  } catch (const std::exception&) {
  }
  QStringList problems = runStartProblems(
      ctx_,
      {start_blocker_,
       ProjectContext::BusyOwner::Training,
       tr("A training run is in progress in the Training tab. Stop it there before "
          "starting a sweep."),
       ctx_->datasetSource(),
       tr("The sweep needs the project's data: %1. Choose a dataset in the Dataset tab."),
       {},
       sweep_check},
      [&] { return largest_batch_config(p.training, checked_space, &batch_param); });
  if (batch_param) {
    // The remedy is the space's batch values, not the Training tab's batch.
    const QString training_tab =
        QObject::tr("Lower the batch size in the Training tab's Run settings.");
    const QString here = tr("Lower the largest batch in the search space (%1).")
                             .arg(QString::fromStdString(batch_param->spec_text()));
    for (QString& line : problems) line.replace(training_tab, here);
  }
  if (!problems.isEmpty()) {
    setMessage(problems.join("\n"), true);
    return false;
  }
  if (!form_->seedValid()) {  // empty, or above 2^64 - 1
    setMessage(tr("The seed must be a whole number from 0 to 18446744073709551615."), true);
    return false;
  }
  std::unique_ptr<Sweep> sweep;
  try {
    SearchSpace space = parse_search_space(toStd(specs()), p.graph);
    // No test split (test fraction 0): an empty test set, as the CLI's sweep
    // has; trials validate on their split of the training set.
    auto data = std::make_shared<const TrainTest>(
        TrainTest{*ctx_->trainSet(), ctx_->testSet() ? *ctx_->testSet() : Dataset{}});
    if (!fresh) {
      if (const QString m = resumeMismatch(o); !m.isEmpty()) {
        setMessage(m, true);
        return false;
      }
    }
    if (p.training.device.cuda) o.parallel = 1;  // the engine runs CUDA trials one at a time
    sweep = std::make_unique<Sweep>(p, data, std::move(space), o, state_path_.toStdString(), fresh);
    loaded_ = o;  // the state file's options from now on
  } catch (const std::exception& e) {
    setMessage(sweepStateErrorText(e, state_path_), true);
    return false;
  }
  const SweepState st = sweep->state();
  model_->reset(sweep->space(), st.trials);
  saveUiSettings();
  QString running_text = sweep->resumed() ? tr("Resuming the sweep…") : tr("Sweep running…");
  if (const std::string why = st.baseline_skipped; !why.empty())
    running_text += QLatin1Char(' ') +
                    tr("No baseline trial: the project's %1.").arg(QString::fromStdString(why));
  log_dir_.clear();
  // A folder of its own: two sweeps started in the same second would
  // otherwise write their trial-NNN sessions into one.
  auto run_folder = [&] {
    const QString base = QString::fromStdString(new_run_folder(p.name + "-sweep"));
    QString dir = base;
    for (int n = 2; QFileInfo::exists(dir); ++n) dir = base + QString("-%1").arg(n);
    return dir;
  };
  if (form_->tensorBoard()) {
    log_dir_ = run_folder();
    running_text += QLatin1Char(' ') + tr("TensorBoard HParams: %1").arg(log_dir_);
  }
  // Beside the state file, as the CLI keeps them; an unsaved project has
  // none, so its sweep's run folder holds them.
  weights_path_ = !state_path_.isEmpty()
                      ? QString::fromStdString(sweep_weights_path(state_path_.toStdString()))
                      : (log_dir_.isEmpty() ? run_folder() : log_dir_) + "/best.safetensors";
  sweep->keep_best_weights(weights_path_.toStdString());
  offered_trial_ = -1;  // a fresh sweep rewrites the file; a resumed one offers again
  setMessage(running_text, false);
  runner_->start(std::move(sweep), log_dir_.toStdString());
  // After the worker exists: busyChanged's receivers ask running().
  ctx_->setBusy(ProjectContext::BusyOwner::Sweep, true);
  updateButtons();
  return true;
}

void ExperimentsPanel::stop() {
  if (!running()) return;
  runner_->stop();
  setMessage(tr("Stopping: the running trials end at their next step and resume later…"), false);
}

void ExperimentsPanel::stopAndWait() {
  // The runner reports the end at once rather than queued: the caller
  // replaces the project next, which the busy flag would refuse.
  runner_->stopAndWait();
}

void ExperimentsPanel::onTrial(const Trial& t) {
  model_->update(t);
  refreshPlots();
  Q_EMIT trialUpdated(t.id);
}

void ExperimentsPanel::onFinished(const QString& error) {
  ctx_->setBusy(ProjectContext::BusyOwner::Sweep, false);
  const SweepState s = runner_->sweep()->state();
  model_->reset(runner_->sweep()->space(), s.trials);
  refreshPlots();
  int counts[5] = {};
  for (const Trial& t : s.trials) ++counts[int(t.status)];
  const bool complete =
      error.isEmpty() && !runner_->stopping() &&
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
  // Trials read the same images: those found bad were skipped in each.
  if (const QString bad = badImagesText(ctx_->trainSet().get()); !bad.isEmpty()) text += "\n" + bad;
  offerBestWeights(s);
  if (const std::string why = runner_->sweep()->weights_problem(); !why.empty())
    text += "\n" +
            tr("The best trial's weights could not be kept: %1").arg(QString::fromStdString(why));
  if (!log_dir_.isEmpty()) text += "\n" + tr("TensorBoard HParams: %1").arg(log_dir_);
  setMessage(text, !error.isEmpty());
  Q_EMIT message(text.section('\n', 0, 0));
  updateButtons();
  Q_EMIT finished(complete);
}

void ExperimentsPanel::offerBestWeights(const SweepState& s) {
  const std::string kept = sweep_best_weights(s, weights_path_.toStdString());
  if (kept.empty()) return;
  const Trial& t = s.trials[size_t(s.best())];
  offered_trial_ = t.id;
  // Trained on the training set less the validation split, for the
  // sweep's epochs per trial; the label says which trial, as the file is
  // rewritten by a later sweep (the entry is then replaced).
  ctx_->addRunCheckpoints({{0,
                            tr("Sweep: best trial %1 (%2 % validation, %3 epochs)")
                                .arg(t.id)
                                .arg(100 * best_val_accuracy(t), 0, 'f', 1)
                                .arg(s.options.epochs),
                            QString::fromStdString(kept)}});
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
  // The best trial may be the project as it is (trial 0, the baseline):
  // nothing to apply, no empty undo step, and the project stays unmodified.
  {
    const Project cur = currentProject();
    const bool same = std::all_of(values.begin(), values.end(), [&](const BestValue& v) {
      if (!v.setting.empty()) {
        const SettingSpec* spec = find_setting(v.setting);
        return spec && spec->get(cur.training) == v.value;
      }
      const Node* n = cur.graph.find_by_name(v.node);
      return n && n->attrs.has(v.attr) && n->attrs.get(v.attr) == v.value;
    });
    if (same) {
      setMessage(tr("Trial %1 has the project's own values: nothing to apply.").arg(t.id), false);
      return true;
    }
  }
  const QString what = tr("Apply best trial %1").arg(t.id);
  const QString why =
      applier_ ? applier_(values, what) : tr("There is no project editor to apply the values to.");
  if (!why.isEmpty()) {
    setMessage(tr("Apply best failed: %1").arg(why), true);
    return false;
  }
  QString applied = tr("Applied trial %1 (%2 % validation accuracy); Ctrl+Z undoes it.")
                        .arg(t.id)
                        .arg(100 * best_val_accuracy(t), 0, 'f', 1);
  // Its weights fit the network as applied: the values may have changed
  // layer sizes, so they are offered, not put in place of the current ones.
  if (offered_trial_ == t.id)
    applied += QLatin1Char(' ') +
               tr("Its trained weights are in the Inference tab's weights list (Sweep: best "
                  "trial %1).")
                   .arg(t.id);
  setMessage(applied, false);
  Q_EMIT message(message_->text());
  // The message is true only while the applier's step is the last one on
  // the stack: once the position moves (undone, or another edit on top) it
  // goes, unless another message has replaced it meanwhile.
  disconnect(applied_watch_);
  const int index = undo_ ? undo_->index() : 0;
  if (index > 0 && undo_->text(index - 1) == what)
    applied_watch_ = connect(undo_, &QUndoStack::indexChanged, this,
                             [this, index, applied = message_->text()](int now) {
                               if (now == index) return;
                               disconnect(applied_watch_);
                               if (message_->text() == applied) setMessage({}, false);
                             });
  return true;
}

void ExperimentsPanel::updateButtons() {
  const bool run = running();
  const bool valid = message_->property("error").toBool() == false || run;
  start_->setEnabled(!run && valid);
  stop_->setEnabled(run && !runner_->stopping());
  resume_->setEnabled(!run && canResume());
  SweepState s;
  s.trials = model_->trials();
  apply_->setEnabled(!run && s.best() >= 0);
  space_->setEditable(!run);
  form_->setEditable(!run);
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
