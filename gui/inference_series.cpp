// The Inference tab for a network that reads a series (a CSV series'
// windows, or any numeric input that is not a picture): a test window of the
// loaded dataset, plotted as the file holds it, and the network's top
// classes for it beside its true class. One window is one forward pass, so
// it runs on the UI thread, with the panel's probe (the weights in use).
#include <deepcanvas/errors.h>
#include <deepcanvas/sequence_data.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <optional>

#include "gui/inference_panel.h"
#include "widgets/series_plot.h"
#include "widgets/top_k_bars.h"

namespace dc::gui {

namespace {

// The single Input's shape, from shape inference alone.
std::optional<Shape> input_shape(const Graph& g) {
  const std::vector<NodeId> inputs = g.inputs();
  if (inputs.size() != 1) return std::nullopt;
  const NodeShape in = g.infer_shapes()[inputs.front()];
  return in.ok() ? std::optional<Shape>(*in.shape) : std::nullopt;
}

}  // namespace

bool reads_series(const Graph& g) {
  if (reads_tokens(g)) return false;
  const std::optional<Shape> in = input_shape(g);
  return in && !is_picture_shape(*in);
}

QWidget* InferencePanel::buildSeriesUi() {
  auto* area = new QWidget(this);
  auto* v = new QVBoxLayout(area);
  v->setContentsMargins(0, 0, 0, 0);
  v->addWidget(new QLabel(tr("<b>Test windows</b>: what the network predicts for a window of "
                             "the test set, beside its true class."),
                          area));
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Test sample"), area));
  series_index_ = new QSpinBox(area);
  series_index_->setObjectName("seriesSample");
  series_index_->setRange(0, 0);
  series_index_->setToolTip(tr("Which window of the test set (Up and Down step through them)"));
  row->addWidget(series_index_);
  series_info_ = new QLabel(area);
  series_info_->setWordWrap(true);
  row->addWidget(series_info_, 1);
  v->addLayout(row);
  auto* body = new QHBoxLayout;
  series_plot_ = new widgets::SeriesPlot(area);
  body->addWidget(series_plot_, 3);
  auto* right = new QVBoxLayout;
  right->addWidget(new QLabel(tr("<b>Top 5</b>"), area));
  series_bars_ = new widgets::TopKBars(area);
  right->addWidget(series_bars_);
  right->addStretch(1);
  body->addLayout(right, 2);
  v->addLayout(body, 1);

  connect(series_index_, &QSpinBox::valueChanged, this, [this] { predictSeries(); });
  // Queued: the panel's own handlers first mark the probe stale and show
  // this view (showInputKind) when another project or Input makes it due.
  for (auto signal : {&ProjectContext::datasetChanged, &ProjectContext::weightsChanged,
                      &ProjectContext::weightsInUseChanged, &ProjectContext::projectChanged})
    connect(
        ctx_, signal, this,
        [this] {
          if (showsSeries() && isVisible()) predictSeries();  // else when shown
        },
        Qt::QueuedConnection);
  return area;
}

bool InferencePanel::showsSeries() const {
  return !series_area_->isHidden();
}

QString InferencePanel::seriesText() const {
  return series_info_->text();
}

void InferencePanel::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (showsSeries()) predictSeries();
}

bool InferencePanel::predictSeries() {
  series_bars_->setEntries({});
  // The test windows are the project's: loaded here, as Start loads them,
  // when the tab is looked at before the Dataset tab.
  QString load_failed;
  if (isVisible() && !ctx_->busy() && !ctx_->project().dataset.path.empty())
    load_failed = ctx_->loadDatasetIfNone(ctx_->datasetSource());
  const std::shared_ptr<Dataset> test = ctx_->testSet();
  if (!test || test->size() == 0) {
    series_plot_->setVisible(false);  // nothing to plot
    series_info_->setText(
        load_failed.isEmpty()
            ? tr("Load the project's dataset (Dataset tab) to see the network's predictions for "
                 "its test windows.")
            : tr("The project's dataset could not be loaded: %1").arg(load_failed));
    return false;
  }
  series_plot_->setVisible(true);
  {
    const QSignalBlocker block(series_index_);
    series_index_->setMaximum(int(std::min<int64_t>(test->size() - 1, INT32_MAX)));
  }
  const int64_t i = series_index_->value();
  // Grey pictures are read row by row by a network whose Input is their
  // rows × columns (the LSTM rows template), as training reads them.
  Dataset one = *test;
  if (const std::optional<Shape> in = input_shape(ctx_->project().graph))
    images_as_row_sequences(one, *in);
  const Shape& s = one.sample_shape;
  if (s.rank() != 2) {
    series_plot_->setVisible(false);
    series_info_->setText(tr("The test samples are %1, not windows of steps: load a dataset that "
                             "fits the network (Dataset tab).")
                              .arg(QString::fromStdString(s.str())));
    return false;
  }
  const int64_t F = s[1];
  const int32_t truth = test->labels[size_t(i)];
  QString info = tr("Window %1 of %2 · true: %3").arg(i).arg(test->size()).arg(className(truth));
  // The window as the file holds it (before normalisation): a CSV's numbers,
  // or a grey picture's pixel rows for a network that reads it row by row.
  std::vector<float> raw(size_t(s.numel()));
  try {
    if (test->is_bytes()) {
      const std::vector<uint8_t> bytes = sample_chw(*test, i);
      std::copy(bytes.begin(), bytes.end(), raw.begin());
    } else {
      test->copy_values(i, 1, raw.data());
    }
  } catch (const std::exception& e) {
    series_info_->setText(QString::fromUtf8(e.what()));
    return false;
  }
  series_plot_->setRows(raw, F, test->feature_names);
  if (!ensureProbe()) {
    const ModelWeights& w = use_checkpoint_ ? checkpoint_ : ctx_->weights();
    series_info_->setText(info + " · " +
                          (w.valid() ? tr("the weights do not fit the network")
                                     : tr("no weights yet: train the network or choose a "
                                          "checkpoint above")));
    return false;
  }
  const Shape in = probe_->input_shape();
  if (!(in == s)) {
    series_info_->setText(
        tr("The test windows are %1 but the network reads %2: load a dataset "
           "that fits it (Dataset tab) or change the Input.")
            .arg(QString::fromStdString(s.str()), QString::fromStdString(in.str())));
    return false;
  }
  const ModelWeights& w = use_checkpoint_ ? checkpoint_ : ctx_->weights();
  one.mean = w.mean;  // normalised as the weights were trained
  one.stddev = w.stddev;
  Tensor x(in.with_batch(1));
  try {
    one.gather(&i, 1, x.f32(), nullptr);
    const Tensor& out = probe_->forward(x);
    const int n = int(out.numel());
    const std::vector<float> probs = softmax(out.f32(), n);
    const int best = showTopClasses(probs, series_bars_);
    info += " · " +
            (best == truth ? tr("predicted %1 (%2 %), right") : tr("predicted %1 (%2 %), wrong"))
                .arg(className(best))
                .arg(100.0 * probs[size_t(std::max(best, 0))], 0, 'f', 1);
  } catch (const std::exception& e) {
    series_info_->setText(tr("Inference failed: %1").arg(QString::fromUtf8(e.what())));
    return false;
  }
  series_info_->setText(info);
  return true;
}

bool InferencePanel::inspectWindow(const InspectedSample& sample) {
  const std::shared_ptr<Dataset> test = ctx_->testSet();
  if (!test || sample.index < 0 || sample.index >= test->size() ||
      !(test->sample_shape == sample.shape)) {
    setMessage(
        tr("%1 is no longer in the loaded test set: list the samples again.").arg(sample.name),
        true);
    return false;
  }
  // The listing's confidences came from these weights: predict with them.
  if (sample.weights && !useCheckpointWeights(*sample.weights, sample.checkpoint,
                                              runCheckpointLabel(sample.checkpoint)))
    return false;
  setMessage({}, false);
  {
    const QSignalBlocker block(series_index_);
    series_index_->setMaximum(int(std::min<int64_t>(test->size() - 1, INT32_MAX)));
    series_index_->setValue(int(sample.index));
  }
  return predictSeries();
}

}  // namespace dc::gui
