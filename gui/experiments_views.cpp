// The Experiments tab's views of a sweep: the trials table's model, the
// parallel-coordinates plot (one axis per parameter and one for the metric,
// lines coloured by it) and the trials' validation curves.
#include <cmath>

#include "gui/experiments_panel.h"
#include "qcustomplot.h"

namespace dc::gui {

namespace {

// Columns before the parameters and after them.
constexpr int kFixedBefore = 2;  // #, status
constexpr int kFixedAfter = 2;   // best val accuracy, epochs

QColor statusColor(Trial::Status s) {
  switch (s) {
    case Trial::Status::Pruned:
      return QColor(150, 150, 150);
    case Trial::Status::Failed:
      return QColor(200, 40, 40);
    case Trial::Status::Running:
      return QColor(30, 110, 200);
    default:
      return {};
  }
}

// A parameter's value on its axis, in [0, 1] (log params on a log scale).
double axisPosition(const SearchParam& p, double x) {
  if (p.kind == SearchParam::Kind::Choice)
    return p.choices.size() > 1 ? x / double(p.choices.size() - 1) : 0.5;
  if (p.kind == SearchParam::Kind::Log)
    return (std::log(x) - std::log(p.lo)) / std::log(p.hi / p.lo);
  return p.hi > p.lo ? (x - p.lo) / (p.hi - p.lo) : 0.5;
}

QString valueText(const SearchParam& p, double x) {
  const AttrValue v = search_value(p, x);
  if (const double* d = std::get_if<double>(&v)) return QString::number(*d, 'g', 3);
  return QString::fromStdString(attr_to_string(v));
}

}  // namespace

double best_val_accuracy(const Trial& t) {
  double best = NAN;
  for (const TrialEpoch& e : t.epochs)
    if (std::isfinite(e.val_accuracy) && !(e.val_accuracy <= best)) best = e.val_accuracy;
  return best;
}

void TrialsModel::reset(const SearchSpace& space, const std::vector<Trial>& trials) {
  beginResetModel();
  space_ = space;
  trials_ = trials;
  endResetModel();
}

void TrialsModel::update(const Trial& t) {
  for (size_t i = 0; i < trials_.size(); ++i)
    if (trials_[i].id == t.id) {
      trials_[i] = t;
      Q_EMIT dataChanged(index(int(i), 0), index(int(i), columnCount() - 1));
      return;
    }
  const int row = int(trials_.size());
  beginInsertRows({}, row, row);
  trials_.push_back(t);
  endInsertRows();
}

int TrialsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(trials_.size());
}

int TrialsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kFixedBefore + int(space_.params.size()) + kFixedAfter;
}

QVariant TrialsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  const int n = int(space_.params.size());
  if (section == 0) return tr("#");
  if (section == 1) return tr("Status");
  if (section < kFixedBefore + n)
    return QString::fromStdString(space_.params[size_t(section - kFixedBefore)].name);
  return section == kFixedBefore + n ? tr("Best val acc") : tr("Epochs");
}

QVariant TrialsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(trials_.size())) return {};
  const Trial& t = trials_[size_t(index.row())];
  const int c = index.column(), n = int(space_.params.size());
  if (role == Qt::ForegroundRole) {
    const QColor col = statusColor(t.status);
    return col.isValid() ? QVariant(col) : QVariant();
  }
  if (role == Qt::ToolTipRole && !t.error.empty()) return QString::fromStdString(t.error);
  if (role == Qt::ToolTipRole && c == 0 && t.baseline)
    return QObject::tr(
        "The project's own values, the baseline the other trials are judged against");
  const bool sort = role == Qt::UserRole;
  if (role != Qt::DisplayRole && !sort) return {};
  if (c == 0)
    return sort || !t.baseline ? QVariant(t.id) : QVariant(QObject::tr("%1 (project)").arg(t.id));
  if (c == 1) return sort ? QVariant(int(t.status)) : QVariant(trial_status_name(t.status));
  if (c < kFixedBefore + n) {
    const size_t i = size_t(c - kFixedBefore);
    if (i >= t.x.size()) return {};
    return sort ? QVariant(t.x[i]) : QVariant(valueText(space_.params[i], t.x[i]));
  }
  if (c == kFixedBefore + n) {
    const double a = best_val_accuracy(t);
    if (sort) return std::isfinite(a) ? a : -1.0;
    return std::isfinite(a) ? QString::number(100 * a, 'f', 2) + " %" : QString("–");
  }
  // Epochs trained: a fraction when ASHA stopped the trial inside an epoch.
  const double trained = t.epochs_trained();
  if (sort) return trained;
  return trained == std::floor(trained) ? QString::number(trained, 'f', 0)
                                        : QString::number(trained, 'f', 2);
}

namespace {

// Grey text in the middle of an empty plot, saying what will appear there.
void placeholder(QCustomPlot* p, const QString& text) {
  auto* t = new QCPItemText(p);
  t->position->setType(QCPItemPosition::ptAxisRectRatio);
  t->position->setCoords(0.5, 0.5);
  t->setText(text);
  t->setColor(QColor(130, 130, 130));
  t->setObjectName("placeholder");
}

}  // namespace

void ExperimentsPanel::refreshPlots() {
  const SearchSpace& space = model_->space();
  const std::vector<Trial>& trials = model_->trials();
  const int n = int(space.params.size());
  // The metric's range colours the lines on viridis, reversed: the best
  // trials dark purple, the worst yellow (the best line was pale yellow on
  // the white plot, the hardest of all to see).
  double lo = INFINITY, hi = -INFINITY;
  for (const Trial& t : trials) {
    const double a = best_val_accuracy(t);
    if (std::isfinite(a)) lo = std::min(lo, a), hi = std::max(hi, a);
  }
  if (!(hi > lo)) lo = std::isfinite(lo) ? lo - 0.01 : 0, hi = std::isfinite(hi) ? hi + 0.01 : 1;
  // Viridis' stops (not among this QCustomPlot's presets): perceptually even,
  // readable in grey.
  QCPColorGradient gradient;
  gradient.setColorStopAt(0.0, QColor(253, 231, 37));
  gradient.setColorStopAt(0.34, QColor(53, 183, 121));
  gradient.setColorStopAt(0.67, QColor(49, 104, 142));
  gradient.setColorStopAt(1.0, QColor(68, 1, 84));
  auto lineColor = [&](const Trial& t) {
    const QColor s = statusColor(t.status);
    if (t.status == Trial::Status::Pruned || t.status == Trial::Status::Failed) return s;
    const double a = best_val_accuracy(t);
    if (!std::isfinite(a)) return s.isValid() ? s : QColor(150, 150, 150);
    return QColor::fromRgb(gradient.color(a, QCPRange(lo, hi)));
  };

  // Parallel coordinates: axis i at x = i, every value scaled to [0, 1] on
  // its axis; the axes' ends are labelled with their ranges.
  QCustomPlot* pc = parallel_;
  pc->clearGraphs();
  pc->clearPlottables();
  pc->clearItems();
  // Before the first trial there are no axes to speak of (the space is
  // the one a sweep starts with): say what the plot will show.
  pc->xAxis->setVisible(!trials.empty());
  if (trials.empty())
    placeholder(pc, tr("Each trial will be a line through its parameters' axes,\n"
                       "coloured by its best validation accuracy"));
  pc->xAxis->setRange(-0.3, n + 0.3);
  pc->yAxis->setRange(-0.12, 1.12);
  pc->yAxis->setVisible(false);
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < n; ++i) {
    const SearchParam& p = space.params[size_t(i)];
    ticker->addTick(i, QString::fromStdString(p.name) +
                           (p.kind == SearchParam::Kind::Log ? tr(" (log)") : QString()));
  }
  ticker->addTick(n, tr("val acc"));
  pc->xAxis->setTicker(ticker);
  pc->xAxis->grid()->setPen(QPen(QColor(80, 80, 80), 1));
  pc->xAxis->grid()->setZeroLinePen(QPen(QColor(80, 80, 80), 1));
  // On the plot's background, so the axis line through a value does not
  // strike it through.
  auto label = [pc](double x, double y, const QString& text) {
    auto* t = new QCPItemText(pc);
    t->position->setCoords(x, y);
    t->setText(text);
    t->setFont(QFont(pc->font().family(), 7));
    t->setColor(QColor(90, 90, 90));
    t->setBrush(QBrush(Qt::white));  // the plots are white in either theme
    t->setPadding(QMargins(2, 0, 2, 0));
  };
  for (int i = 0; i < n && !trials.empty(); ++i) {
    const SearchParam& p = space.params[size_t(i)];
    if (p.kind == SearchParam::Kind::Choice) {
      for (size_t k = 0; k < p.choices.size(); ++k)
        label(i + 0.12, axisPosition(p, double(k)), QString::fromStdString(p.choices[k]));
    } else {
      label(i, -0.07, valueText(p, p.lo));
      label(i, 1.07, valueText(p, p.hi));
    }
  }
  if (!trials.empty()) {
    label(n, -0.07, QString::number(100 * lo, 'f', 1) + " %");
    label(n, 1.07, QString::number(100 * hi, 'f', 1) + " %");
  }
  // Greyed lines first so the coloured ones stay on top.
  for (int pass = 0; pass < 2; ++pass)
    for (const Trial& t : trials) {
      const bool grey = t.status == Trial::Status::Pruned || t.status == Trial::Status::Failed;
      if (grey != (pass == 0) || t.x.size() < size_t(n)) continue;
      QCPGraph* g = pc->addGraph();
      QVector<double> xs, ys;
      for (int i = 0; i < n; ++i)
        xs << i, ys << axisPosition(space.params[size_t(i)], t.x[size_t(i)]);
      const double a = best_val_accuracy(t);
      if (std::isfinite(a)) xs << n, ys << (a - lo) / (hi - lo);
      g->setData(xs, ys, true);
      QPen pen(lineColor(t), grey ? 1.0 : 2.0);
      if (t.status == Trial::Status::Running) pen.setStyle(Qt::DashLine);
      g->setPen(pen);
      g->setName(tr("trial %1").arg(t.id));
    }
  pc->replot(QCustomPlot::rpQueuedReplot);

  // Validation accuracy against epochs trained (ASHA's rungs inside an
  // epoch too), one curve per trial.
  QCustomPlot* cv = curves_;
  cv->clearGraphs();
  cv->clearItems();
  if (trials.empty()) placeholder(cv, tr("Each trial's validation accuracy, epoch by epoch"));
  cv->xAxis->setLabel(tr("epoch"));
  cv->yAxis->setLabel(tr("validation accuracy (%)"));
  double min_epoch = 1, max_epoch = 1;
  double ymin = 100, ymax = 0;
  for (const Trial& t : trials) {
    QCPGraph* g = cv->addGraph();
    QVector<double> xs, ys;
    for (const TrialEpoch& e : t.epochs)
      if (std::isfinite(e.val_accuracy)) {
        xs << e.trained, ys << 100 * e.val_accuracy;
        min_epoch = std::min(min_epoch, e.trained);
        max_epoch = std::max(max_epoch, e.trained);
        ymin = std::min(ymin, 100 * e.val_accuracy), ymax = std::max(ymax, 100 * e.val_accuracy);
      }
    g->setData(xs, ys, true);
    g->setPen(QPen(lineColor(t), 1.5));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
  }
  cv->xAxis->setRange(min_epoch - 0.2, max_epoch + 0.2);
  if (ymax < ymin) ymin = 0, ymax = 100;
  cv->yAxis->setRange(ymin - 2, ymax + 2);
  auto int_ticker = QSharedPointer<QCPAxisTickerFixed>::create();
  int_ticker->setTickStep(1);
  cv->xAxis->setTicker(int_ticker);
  cv->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace dc::gui
