#include "gui/deploy_dialog.h"

#include "gui/format.h"
#include "widgets/dialog_dirs.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/int8_inference.h>
#include <deepcanvas/io.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/qat.h>
#ifdef DC_HAVE_ONNX
#include <deepcanvas/onnx.h>
#include <deepcanvas/onnx_quantize.h>
#endif

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <vector>

namespace dc::gui {

namespace {

struct Cancelled {};

const char* kFormatNames[3] = {"fp32", "fp16", "int8"};

// The samples that measure accuracy: all, or `count` spread evenly over the
// test set, because image folders list their test pictures class by class
// and the first `count` would measure a few classes only.
std::vector<int64_t> testIndices(int64_t size, int64_t count) {
  std::vector<int64_t> idx;
  if (count <= 0 || count >= size) return idx;  // empty: all of them
  for (int64_t i = 0; i < count; ++i) idx.push_back(i * size / count);
  return idx;
}

// Seconds per call of f: the median of a few after one warm-up, for at
// most about half a second, so a large network does not hold the dialog.
double medianSeconds(const std::function<void()>& f, const std::function<void()>& check) {
  using clock = std::chrono::steady_clock;
  check();
  f();
  std::vector<double> t;
  const auto start = clock::now();
  while (t.size() < 3 ||
         (t.size() < 25 && std::chrono::duration<double>(clock::now() - start).count() < 0.5)) {
    check();
    const auto t0 = clock::now();
    f();
    t.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The int8 latency. There is no int8 CPU runtime in the engine yet, so this
// times QuantRunner's simulation (float arithmetic with the QDQ rounding),
// which says nothing about the speed of int8 kernels; the label says so.
struct Int8Latency {
  double seconds = 0;
  QString note;
};
Int8Latency measureInt8Latency(const QuantizedNetwork& q, const Tensor& x, int threads,
                               const std::function<void()>& check) {
  set_num_threads(threads);
  Int8Latency r;
  if (int8_inference_available()) {
    // What `deepcanvas-cli run --int8` runs: oneDNN's int8 kernels.
    Int8Runner run(q, x.dim(0));
    r.seconds = medianSeconds([&] { run.forward(x); }, check);
    r.note = QObject::tr("oneDNN int8 (%1)").arg(QString::fromStdString(int8_cpu_isa()));
    if (!int8_exact_on_this_cpu())
      r.note += QStringLiteral("; ") + QString::fromStdString(int8_cpu_note());
    return r;
  }
  // A build without oneDNN: the simulation's time, which says little.
  QuantRunner run(q.net, x.dim(0));
  run.set_quantized(&q);
  r.seconds = medianSeconds([&] { run.forward(x); }, check);
  r.note = QObject::tr("simulated (this build has no int8 runtime)");
  return r;
}

// The dataset normalised as the weights were trained, without copying it
// when it already is (the usual case: both come from the same training set).
std::shared_ptr<const Dataset> normalisedFor(std::shared_ptr<const Dataset> d, float mean,
                                             float stddev) {
  if (!d->channel_mean.empty() || (d->mean == mean && d->stddev == stddev)) return d;
  auto c = std::make_shared<Dataset>(*d);
  c->mean = mean;
  c->stddev = stddev;
  return c;
}

QString millis(double s) {
  if (s <= 0) return QStringLiteral("—");
  const double ms = 1000 * s;
  return QString::number(ms, 'f', ms < 10 ? 2 : 1) + " ms";
}

QString percent(double fraction) {
  return QString::number(100 * fraction, 'f', 2) + " %";
}

QTableWidgetItem* cell(const QString& text, const QString& tip = {}) {
  auto* it = new QTableWidgetItem(text);
  it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  if (!tip.isEmpty()) it->setToolTip(tip);
  return it;
}

}  // namespace

// Everything the worker reads, copied on the UI thread so the project, the
// weights and the datasets may change (or the window close) meanwhile.
struct DeployDialog::Job {
  Graph graph;
  std::string name;
  ModelWeights weights;
  std::shared_ptr<const Dataset> train, test;
  Options options;
  int64_t batch = 64;
  uint64_t seed = 1;
};

#ifdef DC_HAVE_ONNX
namespace {
// The preprocessing written into the model: the weights' normalisation, or
// the dataset's per-channel one (a pretrained base's).
OnnxPreprocessing preprocessingFor(const Shape& input, const Dataset* test, const ModelWeights& w) {
  OnnxPreprocessing pre;
  pre.enabled = true;
  if (!test)
    throw Error(QObject::tr("Including the preprocessing needs the dataset (its normalisation): "
                            "load it in the Dataset tab")
                    .toStdString());
  if (input.rank() != 3)
    throw Error(QObject::tr("Including the preprocessing needs an image input "
                            "(channels×height×width); the Input is %1")
                    .arg(QString::fromStdString(input.str(true)))
                    .toStdString());
  if (test->pixels.empty() && !test->images)
    throw Error(QObject::tr("Including the preprocessing is for image datasets (bytes in); %1 "
                            "holds float values")
                    .arg(QString::fromStdString(test->source))
                    .toStdString());
  pre.mean = w.mean;
  pre.stddev = w.stddev;
  pre.channel_mean = test->channel_mean;
  pre.channel_std = test->channel_std;
  return pre;
}

std::map<std::string, Tensor> weightMap(const Plan& plan) {
  std::map<std::string, Tensor> m;
  for (auto& [name, t] : plan.state()) m.emplace(name, t);
  return m;
}
}  // namespace
#endif

DeployDialog::DeployDialog(ProjectContext* ctx, QWidget* parent) : QDialog(parent), ctx_(ctx) {
  setWindowTitle(tr("Export for Deployment"));
  setObjectName("deployDialog");
  resize(1180, 470);
  auto* l = new QVBoxLayout(this);
  auto* intro = new QLabel(
      tr("The trained network as an ONNX model for a device (onnxruntime, TensorRT, OpenCV): "
         "fp32, fp16 for GPUs, or int8, calibrated on training samples and measured on the test "
         "set before it is written. Measure compares them on this machine, with the weights the "
         "Inference tab predicts with (its Weights list)."),
      this);
  intro->setWordWrap(true);
  l->addWidget(intro);

  auto* box = new QGroupBox(tr("Options"), this);
  auto* g = new QGridLayout(box);
  method_ = new QComboBox(box);
  method_->setObjectName("deployCalibration");
  for (CalibrationMethod m :
       {CalibrationMethod::MinMax, CalibrationMethod::Percentile, CalibrationMethod::Entropy})
    method_->addItem(QString::fromUtf8(calibration_name(m)), int(m));
  method_->setToolTip(
      tr("How each activation's int8 range is chosen: minmax (the largest value), percentile "
         "(99.99 % of the values) or entropy (TensorRT's KL divergence)"));
  percentile_ = new QDoubleSpinBox(box);
  percentile_->setObjectName("deployPercentile");
  percentile_->setRange(50, 100);
  percentile_->setDecimals(3);
  percentile_->setSingleStep(0.01);
  percentile_->setSuffix(" %");
  percentile_->setToolTip(tr("With percentile calibration: the share of |x| kept in range"));
  calibrate_ = new QSpinBox(box);
  calibrate_->setObjectName("deployCalibrate");
  calibrate_->setRange(1, 1 << 20);
  calibrate_->setToolTip(tr("Training samples whose activations calibrate the int8 ranges"));
  test_samples_ = new QSpinBox(box);
  test_samples_->setObjectName("deployTestSamples");
  test_samples_->setRange(0, 1 << 24);
  test_samples_->setSpecialValueText(tr("All"));
  test_samples_->setToolTip(
      tr("Test samples that measure the accuracy (All: the whole test set; fewer is quicker)"));
  max_drop_ = new QDoubleSpinBox(box);
  max_drop_->setObjectName("deployMaxDrop");
  max_drop_->setRange(0, 100);
  max_drop_->setDecimals(2);
  max_drop_->setSingleStep(0.1);
  max_drop_->setSuffix(tr(" points"));
  max_drop_->setToolTip(
      tr("The int8 model is not written when its test accuracy is lower than fp32's by more"));
  preprocessing_ = new QCheckBox(tr("Include the preprocessing (uint8 picture in)"), box);
  preprocessing_->setObjectName("deployPreprocessing");
  preprocessing_->setToolTip(
      tr("The model takes the picture's bytes at the Input's size and normalises them itself, "
         "so the device needs no code of ours"));
  g->addWidget(new QLabel(tr("Calibration:"), box), 0, 0);
  g->addWidget(method_, 0, 1);
  g->addWidget(new QLabel(tr("Percentile:"), box), 0, 2);
  g->addWidget(percentile_, 0, 3);
  g->addWidget(new QLabel(tr("Calibration samples:"), box), 0, 4);
  g->addWidget(calibrate_, 0, 5);
  g->addWidget(new QLabel(tr("Max drop:"), box), 1, 0);
  g->addWidget(max_drop_, 1, 1);
  g->addWidget(new QLabel(tr("Test samples:"), box), 1, 2);
  g->addWidget(test_samples_, 1, 3);
  g->addWidget(preprocessing_, 1, 4, 1, 2);
  g->setColumnStretch(6, 1);
  l->addWidget(box);

  QSettings s;
  Options o;
  o.method = parse_calibration(s.value("deploy/calibration", "percentile").toString().toStdString())
                 .value_or(CalibrationMethod::Percentile);
  o.percentile = s.value("deploy/percentile", 99.99).toDouble();
  o.calibrate = s.value("deploy/calibrate", 256).toInt();
  o.test_samples = s.value("deploy/testSamples", 0).toInt();
  o.max_drop = s.value("deploy/maxDrop", 1.0).toDouble();
  o.preprocessing = s.value("deploy/preprocessing", false).toBool();
  setOptions(o);
  for (QSpinBox* sb : {calibrate_, test_samples_})
    connect(sb, &QSpinBox::valueChanged, this, [this] {
      saveOptions();
      fillTable();
    });
  for (QDoubleSpinBox* sb : {percentile_, max_drop_})
    connect(sb, &QDoubleSpinBox::valueChanged, this, [this] {
      saveOptions();
      fillTable();
    });
  connect(method_, &QComboBox::currentIndexChanged, this, [this] {
    saveOptions();
    fillTable();
    updateControls();
  });
  connect(preprocessing_, &QCheckBox::toggled, this, [this] { saveOptions(); });

  status_ = new QLabel(this);
  status_->setObjectName("deployStatus");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  l->addWidget(status_);
  progress_ = new QProgressBar(this);
  progress_->setObjectName("deployProgress");
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  l->addWidget(progress_);

  table_ = new QTableWidget(3, kColumns, this);
  table_->setObjectName("deployTable");
  table_->setHorizontalHeaderLabels({tr("Precision"), tr("ONNX file"), tr("Test accuracy"),
                                     tr("CPU latency, batch 1, 1 thread"),
                                     tr("CPU latency, project's batch")});
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionMode(QAbstractItemView::NoSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  // Three rows: the table takes their height, not the dialog's.
  table_->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
  table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  l->addWidget(table_);
  l->addStretch(1);

  auto* row = new QHBoxLayout;
  measure_ = new QPushButton(tr("&Measure"), this);
  measure_->setObjectName("deployMeasure");
  measure_->setToolTip(
      tr("Calibrate the int8 model, measure the accuracies on the test set and the CPU "
         "latencies here"));
  connect(measure_, &QPushButton::clicked, this, [this] { measure(); });
  row->addWidget(measure_);
  cancel_ = new QPushButton(tr("&Cancel"), this);
  cancel_->setObjectName("deployCancel");
  connect(cancel_, &QPushButton::clicked, this, &DeployDialog::cancel);
  row->addWidget(cancel_);
  qat_ = new QPushButton(tr("Fine-tune for int8 (&QAT)…"), this);
  qat_->setObjectName("deployQat");
  connect(qat_, &QPushButton::clicked, this, [this] { fineTuneInt8(); });
  row->addWidget(qat_);
  row->addStretch(1);
  for (int f = 0; f < 3; ++f) {
    export_[size_t(f)] =
        new QPushButton(tr("Export %1…").arg(QString::fromLatin1(kFormatNames[f])), this);
    export_[size_t(f)]->setObjectName(QString("deployExport_%1").arg(kFormatNames[f]));
    connect(export_[size_t(f)], &QPushButton::clicked, this, [this, f] { exportModel(Format(f)); });
    row->addWidget(export_[size_t(f)]);
  }
  auto* close = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
  row->addWidget(close);
  l->addLayout(row);

  // A measurement describes the weights, network and data it ran on.
  connect(ctx_, &ProjectContext::weightsInUseChanged, this, [this] {
    markStale();
    // Weights that arrive while the dialog is open (a run ends, a
    // checkpoint is chosen in the Inference tab) make it ready.
    if (!have_ && !running()) showReadiness();
    updateControls();
  });
  connect(ctx_, &ProjectContext::datasetChanged, this, &DeployDialog::markStale);
  connect(ctx_, &ProjectContext::projectReplaced, this, &DeployDialog::markStale);
  connect(ctx_, &ProjectContext::projectChanged, this, [this] {
    if (have_ && !(measured_graph_ == ctx_->project().graph)) markStale();
  });

  showReadiness();
  fillTable();
  updateControls();
}

void DeployDialog::showReadiness() {
  if (ctx_->weightsInUse().valid() && !ctx_->hasDataset()) {
    setStatus(tr("Measure loads the project's dataset, calibrates int8 on its training part "
                 "and compares the three on its test part, on this machine."),
              false);
    return;
  }
  const QString missing = missingInputs(true);
  setStatus(missing.isEmpty() ? tr("Measure compares the three on this machine.") : missing,
            !missing.isEmpty());
}

DeployDialog::~DeployDialog() {
  cancel_flag_ = true;
  if (worker_.joinable()) worker_.join();
}

DeployDialog::Options DeployDialog::options() const {
  Options o;
  o.method = CalibrationMethod(method_->currentData().toInt());
  o.percentile = percentile_->value();
  o.calibrate = calibrate_->value();
  o.test_samples = test_samples_->value();
  o.max_drop = max_drop_->value();
  o.preprocessing = preprocessing_->isChecked();
  return o;
}

void DeployDialog::setOptions(const Options& o) {
  method_->setCurrentIndex(std::max(0, method_->findData(int(o.method))));
  percentile_->setValue(o.percentile);
  calibrate_->setValue(o.calibrate);
  test_samples_->setValue(o.test_samples);
  max_drop_->setValue(o.max_drop);
  preprocessing_->setChecked(o.preprocessing);
  saveOptions();
}

void DeployDialog::saveOptions() {
  const Options o = options();
  QSettings s;
  s.setValue("deploy/calibration", QString::fromUtf8(calibration_name(o.method)));
  s.setValue("deploy/percentile", o.percentile);
  s.setValue("deploy/calibrate", o.calibrate);
  s.setValue("deploy/testSamples", o.test_samples);
  s.setValue("deploy/maxDrop", o.max_drop);
  s.setValue("deploy/preprocessing", o.preprocessing);
}

QString DeployDialog::missingInputs(bool need_dataset) const {
  if (!ctx_->weightsInUse().valid())
    return tr(
        "There are no trained weights: train the network in the Training tab (or choose a "
        "checkpoint in the Inference tab's Weights list) first; a deployed model of untrained "
        "weights would be of no use.");
  if (need_dataset && (!ctx_->hasDataset() || !ctx_->testSet() || ctx_->testSet()->size() == 0))
    return tr(
        "There is no dataset: load it in the Dataset tab first. The int8 model is "
        "calibrated on its training part and measured on its test part.");
  return {};
}

void DeployDialog::setBlocked(const QString& why) {
  blocked_ = why;
  if (!why.isEmpty() && !running()) setStatus(why, false);
  updateControls();
}

QString DeployDialog::statusText() const {
  return status_->text();
}

void DeployDialog::setStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? "color: #c62828;" : QString());
}

bool DeployDialog::measure() {
  if (running()) return false;
  if (!blocked_.isEmpty()) {
    setStatus(blocked_, true);
    return false;
  }
  // The project's dataset, loaded as Start in the Training tab loads it:
  // Measure works straight after opening a project with trained weights.
  if (ctx_->weightsInUse().valid()) {
    if (const QString why = ctx_->loadDatasetIfNone(ctx_->datasetSource()); !why.isEmpty()) {
      setStatus(tr("The project's dataset could not be loaded: %1. Choose a dataset in the "
                   "Dataset tab; the int8 model is calibrated on its training part and "
                   "measured on its test part.")
                    .arg(why),
                true);
      return false;
    }
  }
  const QString missing = missingInputs(true);
  if (!missing.isEmpty()) {
    setStatus(missing, true);
    return false;
  }
  if (worker_.joinable()) worker_.join();  // the previous one has ended
  auto job = std::make_shared<Job>();
  job->graph = ctx_->project().graph;
  job->name = ctx_->project().name;
  job->weights = ctx_->weightsInUse();
  job->train = ctx_->trainSet();
  job->test = ctx_->testSet();
  job->options = options();
  job->batch = std::max<int64_t>(1, ctx_->project().training.batch);
  job->seed = ctx_->project().training.seed;
  measured_graph_ = job->graph;
  cancel_flag_ = false;
  busy_ = true;
  progress_->setValue(0);
  setStatus(tr("Calibrating…"), false);

  worker_ = std::thread([this, job] {
    auto post = [this](int permille, const QString& stage) {
      QMetaObject::invokeMethod(
          this, [this, permille, stage] { onProgress(permille, stage); }, Qt::QueuedConnection);
    };
    auto check = [this] {
      if (cancel_flag_) throw Cancelled{};
    };
    Result r;
    r.options = job->options;
    QString error;
    bool cancelled = false;
    const int threads_before = num_threads();
    try {
      const Options& o = job->options;
      const ModelWeights& w = job->weights;
      const auto train = normalisedFor(job->train, w.mean, w.stddev);
      const auto test = normalisedFor(job->test, w.mean, w.stddev);
      Plan plan(job->graph, 1, Plan::Use::Inference);
      plan.load_state(w.state, w.source.toStdString());

      // Calibration (0–45 %), two passes but minmax's one.
      QuantNetwork net = fold_batch_norms(plan.steps(), plan.state());
      QuantizeOptions qo;
      qo.method = o.method;
      qo.percentile = o.percentile;
      qo.calibrate = o.calibrate;
      qo.seed = job->seed;
      const std::vector<int64_t> idx = calibration_indices(*train, o.calibrate, qo.seed);
      r.calibrated = int64_t(idx.size());
      auto q = std::make_shared<QuantizedNetwork>(
          calibrate(net, *train, idx, qo, [&](int64_t done, int64_t total) {
            check();
            post(int(450 * done / std::max<int64_t>(total, 1)), tr("Calibrating"));
          }));

      // Accuracy (45–90 %), in chunks so it reports progress and stops.
      const std::vector<int64_t> eval =
          indices_or_all(testIndices(test->size(), o.test_samples), test->size());
      constexpr size_t kChunk = 256;
      int64_t right_fp = 0, right_i8 = 0, same = 0;
      for (size_t at = 0; at < eval.size(); at += kChunk) {
        check();
        const std::vector<int64_t> part(eval.begin() + long(at),
                                        eval.begin() + long(std::min(eval.size(), at + kChunk)));
        const QuantAccuracy a = evaluate_quantized(*q, *test, part, 64);
        right_fp += std::llround(a.fp32 * double(a.samples));
        right_i8 += std::llround(a.int8 * double(a.samples));
        same += std::llround(a.agreement * double(a.samples));
        r.accuracy.samples += a.samples;
        post(450 + int(450 * (at + part.size()) / eval.size()), tr("Measuring the accuracy"));
      }
      if (r.accuracy.samples > 0) {
        const double n = double(r.accuracy.samples);
        r.accuracy.fp32 = double(right_fp) / n;
        r.accuracy.int8 = double(right_i8) / n;
        r.accuracy.agreement = double(same) / n;
      }

      // File sizes: the models as Export writes them.
#ifdef DC_HAVE_ONNX
      OnnxExportOptions oo;
      oo.model_name = job->name;
      const OnnxPreprocessing pre = o.preprocessing
                                        ? preprocessingFor(plan.input_shape(), test.get(), w)
                                        : OnnxPreprocessing{};
      const auto weights = weightMap(plan);
      r.bytes[0] = int64_t(onnx_float_model_bytes(plan.steps(), weights, oo, false, pre).size());
      r.bytes[1] = int64_t(onnx_float_model_bytes(plan.steps(), weights, oo, true, pre).size());
      r.bytes[2] = int64_t(onnx_qdq_model_bytes(*q, oo, pre).size());
#endif

      // Latency (90–100 %): the project's first test samples.
      post(900, tr("Measuring the latency"));
      r.batch = std::min<int64_t>(job->batch, test->size());
      r.threads = resolved_threads(0);
      Tensor x(plan.input_shape().with_batch(r.batch));
      const std::vector<int64_t> first = all_indices(r.batch);
      std::vector<int32_t> labels(size_t(r.batch));
      r.batch = test->gather(first.data(), r.batch, x.f32(), labels.data(), 0);
      if (r.batch < 1) throw Error("no readable test sample to time the network on");
      const Tensor x1 = x.narrow_batch(1), xn = x.narrow_batch(r.batch);
      {
        Plan fp(job->graph, r.batch, Plan::Use::Inference);
        fp.load_state(w.state, w.source.toStdString());
        RunContext rc{false, nullptr};
        set_num_threads(1);
        r.latency1[0] = medianSeconds([&] { fp.forward(x1, rc); }, check);
        set_num_threads(r.threads);
        r.latency_batch[0] = medianSeconds([&] { fp.forward(xn, rc); }, check);
      }
      post(950, tr("Measuring the latency"));
      {
        // One runner per batch size: QuantRunner plans for its largest batch.
        const Int8Latency one = measureInt8Latency(*q, x1, 1, check);
        const Int8Latency many = measureInt8Latency(*q, xn, r.threads, check);
        r.latency1[2] = one.seconds;
        r.latency_batch[2] = many.seconds;
        r.int8_latency_note = one.note;
      }
      r.quantized = std::move(q);
    } catch (const Cancelled&) {
      cancelled = true;
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    set_num_threads(threads_before);
    QMetaObject::invokeMethod(
        this,
        [this, ok = error.isEmpty() && !cancelled, cancelled, error, r = std::move(r)]() mutable {
          onDone(ok, cancelled, error, std::move(r));
        },
        Qt::QueuedConnection);
  });
  updateControls();  // running() now
  return true;
}

bool DeployDialog::fineTuneInt8(int epochs, int64_t steps_per_epoch) {
  if (running()) return false;
  if (!blocked_.isEmpty()) {
    setStatus(blocked_, true);
    return false;
  }
  if (!have_ || stale_ || !result_.quantized) {
    setStatus(tr("Measure first: fine-tuning starts from the calibrated int8 model."), true);
    return false;
  }
  const QString missing = missingInputs(true);
  if (!missing.isEmpty()) {
    setStatus(missing, true);
    return false;
  }
  if (worker_.joinable()) worker_.join();
  const TrainConfig& c = ctx_->project().training;
  auto qo = std::make_shared<QatOptions>();
  qo->epochs = epochs > 0 ? epochs : 3;
  qo->steps_per_epoch_limit = steps_per_epoch;
  qo->batch = std::max<int64_t>(1, c.batch);
  qo->optimizer = c.optimizer;
  qo->optimizer.lr = c.optimizer.lr / 10;  // as train --qat
  qo->loss = c.loss;
  qo->label_smoothing = c.label_smoothing;
  qo->seed = c.seed;
  const ModelWeights& w = ctx_->weightsInUse();
  const auto train = normalisedFor(ctx_->trainSet(), w.mean, w.stddev);
  const auto test = normalisedFor(ctx_->testSet(), w.mean, w.stddev);
  Result base = result_;
  cancel_flag_ = false;
  busy_ = true;
  progress_->setValue(0);
  setStatus(tr("Fine-tuning for int8…"), false);
  worker_ = std::thread([this, qo, train, test, base] {
    auto post = [this](int permille, const QString& stage) {
      QMetaObject::invokeMethod(
          this, [this, permille, stage] { onProgress(permille, stage); }, Qt::QueuedConnection);
    };
    Result r = base;
    QString error;
    bool cancelled = false;
    const int threads_before = num_threads();
    try {
      set_num_threads(0);
      // A QAT result fine-tunes on from its learned ranges.
      const QuantizedNetwork& start = *base.quantized;
      const int64_t steps_per_epoch =
          std::min<int64_t>((train->size() + qo->batch - 1) / qo->batch,
                            qo->steps_per_epoch_limit > 0 ? qo->steps_per_epoch_limit : INT64_MAX);
      auto q = std::make_shared<QuantizedNetwork>(train_qat(
          start, *train, Dataset{}, *qo, {},
          [&](int64_t step, int64_t total) {
            const int64_t epoch = (step - 1) / std::max<int64_t>(steps_per_epoch, 1) + 1;
            post(int(900 * step / std::max<int64_t>(total, 1)),
                 tr("Fine-tuning for int8, epoch %1 of %2").arg(epoch).arg(qo->epochs));
          },
          [this] { return cancel_flag_.load(); }, &cancelled));
      if (!cancelled) {
        // Measured on the samples the calibrated model was, against the
        // fp32 weights as they are (the fine-tuned float weights exist only
        // inside the int8 model).
        post(900, tr("Measuring the accuracy"));
        const std::vector<int64_t> idx = testIndices(test->size(), base.options.test_samples);
        const QuantAccuracy a = evaluate_quantized(*q, *test, idx, 64);
        r.ptq_int8 = base.qat_epochs > 0 ? base.ptq_int8 : base.accuracy.int8;
        r.qat_epochs = base.qat_epochs + qo->epochs;
        r.accuracy.int8 = a.int8;
        r.accuracy.agreement = a.agreement;
        r.quantized = std::move(q);
      }
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    set_num_threads(threads_before);
    QMetaObject::invokeMethod(
        this,
        [this, ok = error.isEmpty() && !cancelled, cancelled, error, r = std::move(r)]() mutable {
          onQatDone(ok, cancelled, error, std::move(r));
        },
        Qt::QueuedConnection);
  });
  updateControls();
  return true;
}

void DeployDialog::onQatDone(bool ok, bool cancelled, const QString& error, Result r) {
  if (worker_.joinable()) worker_.join();
  busy_ = false;
  if (ok) {
    result_ = std::move(r);
    progress_->setValue(1000);
    QString text = tr("Fine-tuned for int8 (QAT, %1 epochs): int8 test accuracy %2 (calibrated: "
                      "%3; fp32: %4) on %5 test samples. Export int8 writes the fine-tuned "
                      "model with its learned ranges.")
                       .arg(result_.qat_epochs)
                       .arg(percent(result_.accuracy.int8), percent(result_.ptq_int8),
                            percent(result_.accuracy.fp32))
                       .arg(result_.accuracy.samples);
    const QString refusal = int8Refusal();
    if (!refusal.isEmpty()) text += "\n" + refusal;
    setStatus(text, !refusal.isEmpty());
  }
  finishRun(ok, cancelled, tr("Fine-tuning cancelled; the int8 model is as before."),
            tr("Could not fine-tune: %1").arg(error));
  Q_EMIT fineTuned(ok);
}

void DeployDialog::cancel() {
  if (!running()) return;
  cancel_flag_ = true;
  setStatus(tr("Cancelling…"), false);
  cancel_->setEnabled(false);
}

void DeployDialog::onProgress(int permille, const QString& stage) {
  if (cancel_flag_) return;
  progress_->setValue(permille);
  setStatus(stage + QStringLiteral("…"), false);
}

void DeployDialog::onDone(bool ok, bool cancelled, const QString& error, Result r) {
  if (worker_.joinable()) worker_.join();  // it posted this as its last act
  busy_ = false;
  if (ok) {
    result_ = std::move(r);
    have_ = true;
    stale_ = false;
    progress_->setValue(1000);
    // Which weights: the Inference tab may hold a checkpoint rather than
    // the latest run's.
    QString text =
        tr("With %1: measured on %2 test samples; int8 calibrated on %3 training samples (%4).")
            .arg(ctx_->weightsInUse().source)
            .arg(result_.accuracy.samples)
            .arg(result_.calibrated)
            .arg(QString::fromUtf8(calibration_name(result_.options.method)));
    const QString refusal = int8Refusal();
    if (!refusal.isEmpty()) text += "\n" + refusal;
    // What the int8 model is made of, as the CLI's export prints it.
    const QuantizedNetwork& q = *result_.quantized;
    QStringList quantized, left, folded;
    for (const QuantOp& op : q.ops)
      quantized << QString::fromStdString(q.net.steps[size_t(op.step)].name);
    for (const auto& n : q.left_in_float) left << QString::fromStdString(n);
    for (const auto& n : q.net.folded) folded << QString::fromStdString(n);
    text +=
        "\n" + tr("int8: %1; left in float: %2%3. The argmax agrees with fp32 on %4 of the "
                  "test samples.")
                   .arg(quantized.isEmpty() ? tr("nothing") : quantized.join(", "),
                        left.isEmpty() ? tr("no layer with weights") : left.join(", "),
                        folded.isEmpty() ? QString() : tr("; folded: %1").arg(folded.join(", ")),
                        percent(result_.accuracy.agreement));
    setStatus(text, !refusal.isEmpty());
  }
  finishRun(ok, cancelled, tr("Cancelled; nothing was written."),
            tr("Could not measure: %1").arg(error));
  Q_EMIT measured(ok);
}

void DeployDialog::finishRun(bool ok, bool cancelled, const QString& cancelled_text,
                             const QString& failed_text) {
  if (!ok) {
    progress_->setValue(0);
    if (cancelled)
      setStatus(cancelled_text, false);
    else
      setStatus(failed_text, true);
  }
  fillTable();
  updateControls();
}

void DeployDialog::markStale() {
  if (!have_ || stale_) return;
  stale_ = true;
  setStatus(tr("The weights, the network or the dataset changed since the measurement: "
               "Measure again."),
            false);
  fillTable();
  updateControls();
}

QString DeployDialog::int8Refusal() const {
  if (!have_) return {};
  const QuantAccuracy& a = result_.accuracy;
  const double max_drop = max_drop_->value();
  if (a.drop_points() <= max_drop) return {};
  return tr("The int8 model's test accuracy is %1 % against %2 % in fp32, %3 points lower "
            "(more than the maximum drop, %4); it is not exported. %5")
      .arg(100 * a.int8, 0, 'f', 2)
      .arg(100 * a.fp32, 0, 'f', 2)
      .arg(a.drop_points(), 0, 'f', 2)
      .arg(max_drop, 0, 'f', 2)
      .arg(gateAdvice(result_.options.method, result_.options.calibrate));
}

QString DeployDialog::gateAdvice(CalibrationMethod used, int64_t calibrate) {
  const GateAdvice g = quantization_gate_advice(used, calibrate);
  QStringList others;
  for (const std::string& o : g.other_methods) others << QString::fromStdString(o);
  return tr("Try another calibration method (%1), more calibration samples (%2), Fine-tune "
            "for int8 (QAT), or the fp16 model.")
      .arg(others.join(tr(" or ")))
      .arg(g.more_samples);
}

void DeployDialog::fillTable() {
  const QString fp16_tip =
      tr("The engine has no fp16 executor: this is the fp32 accuracy. fp16 usually stays "
         "within 0.1 point of it; onnxruntime on the exported model measures it exactly.");
  const QString fp16_latency_tip =
      tr("fp16 is for GPUs (TensorRT, onnxruntime's CUDA provider): CPUs compute it no faster "
         "than fp32");
  const bool show = have_;
  const Result& r = result_;
  if (show) {
    table_->horizontalHeaderItem(kLatencyBatch)
        ->setText(tr("CPU latency, batch %1, %2 threads").arg(r.batch).arg(r.threads));
  }
  for (int f = 0; f < 3; ++f) {
    table_->setItem(f, kPrecision, cell(QString::fromLatin1(kFormatNames[f])));
    table_->item(f, kPrecision)->setTextAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    QString size = QStringLiteral("—");
    if (show && r.bytes[size_t(f)] > 0) {
      size = humanBytes(double(r.bytes[size_t(f)]));
      if (f > 0 && r.bytes[0] > 0)
        size += tr(" (%1 % of fp32)")
                    .arg(100.0 * double(r.bytes[size_t(f)]) / double(r.bytes[0]), 0, 'f', 0);
    }
    table_->setItem(f, kSize, cell(size));
  }
  QString acc32 = "—", acc16 = "—", acc8 = "—", acc8_tip;
  if (show) {
    acc32 = percent(r.accuracy.fp32);
    acc16 = tr("≈ %1 (fp32)").arg(percent(r.accuracy.fp32));
    acc8 =
        (r.qat_epochs > 0 ? tr("%1 (%2 points, simulated, QAT)") : tr("%1 (%2 points, simulated)"))
            .arg(percent(r.accuracy.int8))
            .arg(QString::asprintf("%+.2f", -r.accuracy.drop_points()));
    acc8_tip = tr("The engine's exact simulation of the QDQ arithmetic; the argmax agrees with "
                  "fp32 on %1 of the samples")
                   .arg(percent(r.accuracy.agreement));
  }
  table_->setItem(0, kAccuracy, cell(acc32));
  table_->setItem(1, kAccuracy, cell(acc16, fp16_tip));
  table_->setItem(2, kAccuracy, cell(acc8, acc8_tip));
  const QString refusal = int8Refusal();
  if (!refusal.isEmpty()) {
    table_->item(2, kAccuracy)->setForeground(QColor("#c62828"));
    table_->item(2, kAccuracy)->setToolTip(refusal);
  }
  for (int c : {kLatency1, kLatencyBatch}) {
    const auto& lat = c == kLatency1 ? r.latency1 : r.latency_batch;
    table_->setItem(0, c, cell(show ? millis(lat[0]) : "—"));
    table_->setItem(1, c, cell("—", fp16_latency_tip));
    QString i8 = "—";
    if (show && lat[2] > 0) i8 = millis(lat[2]) + " — " + r.int8_latency_note;
    table_->setItem(2, c, cell(i8, show ? r.int8_latency_note : QString()));
  }
  if (stale_)
    for (int f = 0; f < 3; ++f)
      for (int c = kSize; c < kColumns; ++c)
        if (auto* it = table_->item(f, c))
          it->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
}

void DeployDialog::updateControls() {
  const bool busy = running();
  measure_->setEnabled(!busy && blocked_.isEmpty());
  measure_->setText(have_ ? tr("Re-&measure") : tr("&Measure"));
  cancel_->setEnabled(busy && !cancel_flag_);
  qat_->setEnabled(!busy && blocked_.isEmpty() && have_ && !stale_);
  qat_->setToolTip(
      have_ ? tr("Quantization-aware training: fine-tunes the measured int8 model for a few "
                 "epochs on the CPU with its int8 arithmetic in the loop and learns its ranges "
                 "(as deepcanvas-cli train --qat); the result replaces the int8 model that "
                 "Export int8 writes")
            : tr("Measure first: fine-tuning starts from the calibrated int8 model"));
  for (QWidget* w : std::initializer_list<QWidget*>{method_, calibrate_, test_samples_})
    w->setEnabled(!busy);
  percentile_->setEnabled(!busy && CalibrationMethod(method_->currentData().toInt()) ==
                                       CalibrationMethod::Percentile);
#ifdef DC_HAVE_ONNX
  const bool weights = ctx_->weightsInUse().valid();
  export_[0]->setEnabled(!busy && weights);
  export_[1]->setEnabled(!busy && weights);
  export_[2]->setEnabled(!busy && have_ && !stale_);
  export_[2]->setToolTip(have_ ? QString()
                               : tr("Measure first: int8 is calibrated and checked "
                                    "on the test set before it is written"));
#else
  for (QPushButton* b : export_) {
    b->setEnabled(false);
    b->setToolTip(
        tr("This build of DeepCanvas has no ONNX support (install libonnx-dev and "
           "rebuild)."));
  }
#endif
}

bool DeployDialog::exportModel(Format f, QString path) {
  auto fail = [this](const QString& text) {
    setStatus(text, true);
    if (!quiet_) QMessageBox::warning(this, tr("Export for Deployment"), text);
    return false;
  };
#ifdef DC_HAVE_ONNX
  if (running()) return fail(tr("Wait for the measurement to finish (or cancel it)."));
  const QString missing = missingInputs(false);
  if (!missing.isEmpty()) return fail(missing);
  const Options o = options();
  if (f == Format::Int8) {
    if (!have_)
      return fail(
          tr("Measure first: the int8 model is calibrated and checked on the test set "
             "before it is written."));
    if (stale_)
      return fail(
          tr("The weights, the network or the dataset changed since the measurement: "
             "Measure again."));
    if (o.method != result_.options.method || o.calibrate != result_.options.calibrate ||
        o.percentile != result_.options.percentile ||
        o.test_samples != result_.options.test_samples)
      return fail(tr("The calibration options changed since the measurement: Measure again."));
    const QString refusal = int8Refusal();
    if (!refusal.isEmpty()) return fail(refusal);
  }
  const char* name = kFormatNames[int(f)];
  if (path.isEmpty()) {
    const QString dir =
        widgets::dialogStart("exports", QString::fromStdString(ctx_->project().file));
    const QString base = QString::fromStdString(ctx_->project().name).isEmpty()
                             ? QStringLiteral("model")
                             : QString::fromStdString(ctx_->project().name);
    path = QFileDialog::getSaveFileName(
        this, tr("Export %1 ONNX Model").arg(QString::fromLatin1(name)),
        dir + "/" + base + "_" + QString::fromLatin1(name) + ".onnx", tr("ONNX models (*.onnx)"));
    if (path.isEmpty()) return false;
    widgets::rememberDialogChoice("exports", path);
  }
  try {
    const ModelWeights& w = ctx_->weightsInUse();
    const Project& p = ctx_->project();
    Plan plan(p.graph, 1, Plan::Use::Inference);
    plan.load_state(w.state, w.source.toStdString());
    OnnxExportOptions oo;
    oo.model_name = p.name;
    const OnnxPreprocessing pre =
        o.preprocessing ? preprocessingFor(plan.input_shape(), ctx_->testSet().get(), w)
                        : OnnxPreprocessing{};
    std::string bytes;
    if (f == Format::Int8)
      bytes = onnx_qdq_model_bytes(*result_.quantized, oo, pre);
    else if (f == Format::Fp32 && !pre.enabled)
      bytes = onnx_model_bytes(p.graph, plan, oo);
    else
      bytes = onnx_float_model_bytes(plan.steps(), weightMap(plan), oo, f == Format::Fp16, pre);
    write_file_atomic(path.toStdString(), bytes);
    setStatus(tr("%1 ONNX model of %4 written to %2 (%3)")
                  .arg(QString::fromLatin1(name), QDir::toNativeSeparators(path),
                       humanBytes(double(bytes.size())), w.source),
              false);
    return true;
  } catch (const std::exception& e) {
    return fail(tr("Could not export the %1 model: %2")
                    .arg(QString::fromLatin1(name), QString::fromUtf8(e.what())));
  }
#else
  (void)f;
  (void)path;
  return fail(
      tr("This build of DeepCanvas has no ONNX support (install libonnx-dev and rebuild)."));
#endif
}

}  // namespace dc::gui
