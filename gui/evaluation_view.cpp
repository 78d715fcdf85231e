#include "gui/evaluation_view.h"

#include "widgets/confusion_matrix_widget.h"
#include "widgets/image_grid.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/metrics.h>
#include <deepcanvas/plan.h>

#include <QLabel>
#include <QListWidget>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>

namespace dc::gui {

namespace {
QString cellPrompt() {
  return EvaluationView::tr("Click a cell to list its samples, most confident first.");
}
}  // namespace

EvaluationView::EvaluationView(ProjectContext* ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  auto* lay = new QVBoxLayout(this);
  title_ = new QLabel(tr("<b>Confusion matrix</b>"), this);
  lay->addWidget(title_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  matrix_ = new widgets::ConfusionMatrixWidget(split);
  auto* right = new QWidget(split);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  cell_label_ = new QLabel(cellPrompt(), right);
  cell_label_->setWordWrap(true);
  grid_ = new widgets::ImageGrid(right, 56);
  rl->addWidget(cell_label_);
  rl->addWidget(grid_, 1);
  split->addWidget(matrix_);
  split->addWidget(right);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  lay->addWidget(split, 1);
  connect(matrix_, &widgets::ConfusionMatrixWidget::cellClicked, this, &EvaluationView::showCell);
  // A double-click or Enter (the platform's activation), not a click: a
  // click only selects, so looking through the samples stays on this tab.
  connect(grid_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* it) { inspect(grid_->row(it)); });
}

bool EvaluationView::inspectable() const {
  const Dataset* ds = preds_ds_.get();
  if (!ds) return false;
  // A window of steps (a CSV series', or a grey picture read row by row):
  // the Inference tab's test-window view shows it.
  if (!ds->tokens && ds->sample_shape.rank() == 2) return true;
  if (!ds->images && ds->pixels.empty()) return false;
  return is_picture_shape(ds->sample_shape);
}

bool EvaluationView::inspect(int row) {
  if (row < 0 || row >= int(listed_.size()) || !preds_weights_) return false;
  if (!inspectable()) {
    cell_label_->setText(
        tr("These samples are neither pictures nor series: the Inference tab cannot show them."));
    return false;
  }
  const Dataset& ds = *preds_ds_;
  const SamplePrediction& s = listed_[size_t(row)];
  InspectedSample out;
  out.name = ds.images ? QString::fromStdString(ds.images->item(s.index).path)
                       : tr("test #%1").arg(s.index);
  out.index = s.index;
  try {
    if (ds.is_bytes()) out.chw = sample_chw(ds, s.index);
  } catch (const std::exception& e) {
    // A picture gone or broken since it was listed (bad images as errors).
    cell_label_->setText(tr("Could not read %1: %2").arg(out.name, QString::fromUtf8(e.what())));
    return false;
  }
  out.shape = ds.sample_shape;
  out.true_class = int(s.label);
  out.weights = preds_weights_;
  out.checkpoint = predicted_for_;
  Q_EMIT inspectRequested(out);
  return true;
}

EvaluationView::~EvaluationView() {
  if (worker_.joinable()) worker_.join();
}

void EvaluationView::clear() {
  matrix_->setMatrix({});
  grid_->clear();
  preds_.clear();
  listed_.clear();
  preds_ds_.reset();
  preds_weights_.reset();
  predicted_for_.clear();
  checkpoint_.clear();
  // The previous run's cell and epoch describe nothing now.
  pending_t_ = pending_p_ = -1;
  title_->setText(tr("<b>Confusion matrix</b>"));
  cell_label_->setText(cellPrompt());
}

QString EvaluationView::cellText() const {
  return cell_label_->text();
}

void EvaluationView::setConfusion(const std::vector<std::vector<int64_t>>& m, int epoch) {
  matrix_->setMatrix(m, ctx_->classNames());
  std::vector<widgets::ConfusionMatrixWidget::ClassShares> shares;
  for (const ClassScores& c : class_scores(m))
    shares.push_back({c.recall, c.precision, c.f1, c.support});
  matrix_->setClassShares(std::move(shares));
  bool test = ctx_->testSet() != nullptr;
  title_->setText(tr("<b>Confusion matrix</b> — %1 set, after epoch %2")
                      .arg(test ? tr("test") : tr("validation"))
                      .arg(epoch));
}

void EvaluationView::setCheckpoint(const QString& path) {
  checkpoint_ = path;
  // Each epoch rewrites last.safetensors: predictions made from the file
  // before are not this checkpoint's, so the next cell click computes anew.
  const bool was_listed = !predicted_for_.isEmpty() && grid_->count() > 0;
  predicted_for_.clear();
  // The listing stays (the user may be looking at it) but says it is older
  // than the matrix above it; listing anew each epoch would take the
  // training's cores for a test-set pass nobody asked for.
  if (was_listed && !cell_label_->text().contains(staleNote()))
    cell_label_->setText(cell_label_->text() + "<br>" + staleNote());
}

QString EvaluationView::staleNote() const {
  return tr(
      "<i>Listed with an earlier epoch's weights: click the cell again to list it with "
      "the newest.</i>");
}

void EvaluationView::showCell(int t, int p) {
  QStringList names = ctx_->classNames();
  auto nm = [&](int i) { return i < names.size() ? names[i] : QString::number(i); };
  cell_label_->setText(tr("True <b>%1</b>, predicted <b>%2</b>:").arg(nm(t), nm(p)));
  if (!predicted_for_.isEmpty() && predicted_for_ == checkpoint_) {
    list(t, p);
    return;
  }
  std::shared_ptr<Dataset> ds = ctx_->testSet();
  if (checkpoint_.isEmpty() || !ds) {
    cell_label_->setText(
        tr("Samples can be listed once a checkpoint of this run exists "
           "(after the first epoch) and the dataset has a test set."));
    return;
  }
  pending_t_ = t;
  pending_p_ = p;
  if (worker_.joinable()) return;  // the running job will list the pending cell
  cell_label_->setText(cell_label_->text() + tr(" computing predictions…"));
  QString ck = checkpoint_;
  Graph g = ctx_->project().graph;
  worker_ = std::thread([this, ck, g, ds] {
    std::vector<SamplePrediction> preds;
    std::shared_ptr<const ModelWeights> weights;
    QString error;
    try {
      auto w = std::make_shared<ModelWeights>(weights_from_checkpoint(ck));
      Plan plan(g, 256, Plan::Use::Inference);
      plan.load_state(w->state, ck.toStdString());
      Dataset copy = *ds;  // normalised as the checkpoint was trained
      copy.mean = w->mean;
      copy.stddev = w->stddev;
      preds = predict_samples(plan, copy);
      weights = std::move(w);
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    // Queued to this object: discarded by Qt if the view is gone (joined first).
    QMetaObject::invokeMethod(
        this,
        [this, ck, ds, weights, preds = std::move(preds), error] {
          if (worker_.joinable()) worker_.join();
          if (pending_t_ < 0) return;  // cleared meanwhile: a new run started
          if (!error.isEmpty()) {
            cell_label_->setText(tr("Could not compute predictions: %1").arg(error));
            Q_EMIT samplesListed(0);
            return;
          }
          preds_ = preds;
          preds_ds_ = ds;
          preds_weights_ = weights;
          predicted_for_ = ck;
          if (ck != checkpoint_) {  // a newer checkpoint arrived meanwhile
            showCell(pending_t_, pending_p_);
            return;
          }
          list(pending_t_, pending_p_);
        },
        Qt::QueuedConnection);
  });
}

void EvaluationView::list(int t, int p) {
  listed_.clear();
  for (const auto& s : preds_)
    if (s.label == t && s.predicted == p) listed_.push_back(s);
  std::stable_sort(listed_.begin(), listed_.end(),
                   [](const auto& a, const auto& b) { return a.confidence > b.confidence; });
  grid_->clear();
  const Dataset* ds = preds_ds_.get();                         // the samples the predictions are of
  const size_t shown = std::min<size_t>(listed_.size(), 200);  // a grid of thousands helps nobody
  for (size_t i = 0; i < shown; ++i) {
    const auto& s = listed_[i];
    QImage img = ds ? sample_image(*ds, s.index) : QImage();
    QString cap = QString("%1 %").arg(100.0 * s.confidence, 0, 'f', 1);
    QString tip = tr("test sample #%1\nconfidence %2 %, true class probability %3 %")
                      .arg(s.index)
                      .arg(100.0 * s.confidence, 0, 'f', 1)
                      .arg(100.0 * s.label_prob, 0, 'f', 1);
    grid_->addImage(img, cap, tip, QVariant::fromValue<qlonglong>(s.index));
  }
  QStringList names = ctx_->classNames();
  auto nm = [&](int i) { return i < names.size() ? names[i] : QString::number(i); };
  cell_label_->setText(
      tr("True <b>%1</b>, predicted <b>%2</b>: %3 sample(s)%4, most confident first%5")
          .arg(nm(t), nm(p))
          .arg(listed_.size())
          .arg(listed_.size() > shown ? tr(" (first %1 shown)").arg(shown) : QString())
          .arg(inspectable() ? tr("; double-click one to inspect it in the Inference tab")
                             : QString()));
  Q_EMIT samplesListed(int(listed_.size()));
}

}  // namespace dc::gui
