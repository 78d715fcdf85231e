#include "gui/benchmark_dialog.h"

#include "gui/format.h"

#include <deepcanvas/device.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/sysinfo.h>

#include <QCheckBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace dc::gui {

namespace {

// One measurement per process, whichever dialog started it: the worker
// outlives a closed dialog, and dialogs learn of its end by polling.
std::atomic<bool> g_running{false};
std::mutex g_error_m;
QString g_error;  // the last measurement's failure, if any

// The worker, joinable and owned by the process rather than detached:
// quitting during a measurement joins it (aboutToQuit, and this holder's
// destructor, which runs before g_error's because it is constructed later)
// instead of running static destructors under a live thread.
struct Worker {
  std::thread thread;
  ~Worker() { join(); }
  void join() {
    if (thread.joinable()) thread.join();
  }
};
Worker& worker() {
  static Worker w;
  return w;
}

// What a run with threads 0 uses, not what the last Trainer left set.
std::string this_key() {
  return advisor::bench_key("cpu", advisor::cpu_model_name(), resolved_threads(0));
}

QTableWidgetItem* cell(const QString& text, bool bold = false) {
  auto* it = new QTableWidgetItem(text);
  it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  if (bold) {
    QFont f = it->font();
    f.setBold(true);
    it->setFont(f);
  }
  return it;
}

QString num(double v) {
  return v > 0 ? QString::number(v, 'f', v < 100 ? 1 : 0) : QString("—");
}

enum Column { kDevice, kFp32, kTensor, kConv, kBandwidth, kMemory, kTdp, kColumns };

}  // namespace

QStringList BenchmarkDialog::featuredGpus() {
  return {"NVIDIA H100 SXM", "NVIDIA A100 80GB SXM", "NVIDIA L4", "NVIDIA T4",
          "NVIDIA GeForce RTX 4090"};
}

BenchmarkDialog::BenchmarkDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Benchmark This Machine"));
  setObjectName("benchmarkDialog");
  resize(900, 420);
  auto* l = new QVBoxLayout(this);
  auto* intro = new QLabel(
      tr("The engine's own kernels on this machine (what training here can reach) beside the "
         "catalog GPUs' datasheet figures. The advisor divides each layer's FLOPs and bytes by "
         "these rates."),
      this);
  intro->setWordWrap(true);
  l->addWidget(intro);
  status_ = new QLabel(this);
  status_->setObjectName("benchmarkStatus");
  status_->setWordWrap(true);
  l->addWidget(status_);
  busy_ = new QProgressBar(this);
  busy_->setRange(0, 0);  // busy: the benchmark reports no progress of its own
  busy_->setTextVisible(false);
  busy_->setMaximumHeight(8);
  l->addWidget(busy_);
  table_ = new QTableWidget(0, kColumns, this);
  table_->setObjectName("benchmarkTable");
  table_->setHorizontalHeaderLabels({tr("Device"), tr("FP32 GFLOP/s"),
                                     tr("Tensor bf16/fp16 GFLOP/s"), tr("Conv2D GFLOP/s"),
                                     tr("Bandwidth GB/s"), tr("Memory"), tr("TDP W")});
  table_->horizontalHeaderItem(kFp32)->setToolTip(
      tr("This machine: dc::sgemm 1024³ (measured). GPUs: CUDA-core FP32 peak (datasheet)"));
  table_->horizontalHeaderItem(kConv)->setToolTip(
      tr("Conv2D forward, 64→64 channels 3×3 on 32×32, batch 16 (measured here only)"));
  table_->horizontalHeaderItem(kBandwidth)
      ->setToolTip(tr("This machine: a STREAM-like triad over 3 × 64 MiB. GPUs: datasheet peak"));
  table_->horizontalHeaderItem(kMemory)->setToolTip(
      tr("This machine: memory available now. GPUs: device memory"));
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(kDevice, QHeaderView::Stretch);
  l->addWidget(table_, 1);

  auto* row = new QHBoxLayout;
  all_ = new QCheckBox(tr("All catalog GPUs"), this);
  all_->setToolTip(tr("Every row of the GPU catalog (with your own), not just a few"));
  all_->setChecked(QSettings().value("benchmark/allGpus", false).toBool());
  connect(all_, &QCheckBox::toggled, this, [this](bool on) {
    QSettings().setValue("benchmark/allGpus", on);
    fillTable();
  });
  row->addWidget(all_);
  row->addStretch(1);
  measure_ = new QPushButton(tr("&Re-measure"), this);
  measure_->setObjectName("benchmarkMeasure");
  measure_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  connect(measure_, &QPushButton::clicked, this, &BenchmarkDialog::measure);
  row->addWidget(measure_);
  auto* close = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
  row->addWidget(close);
  l->addLayout(row);

  poll_ = new QTimer(this);
  poll_->setInterval(150);
  connect(poll_, &QTimer::timeout, this, &BenchmarkDialog::poll);
  try {
    catalog_ = advisor::load_gpu_catalog();
  } catch (const std::exception& e) {
    catalog_error_ = QString::fromUtf8(e.what());
  }
  gpus_ = list_gpus();
  loadCached();
  // One started from a dialog closed earlier: follow it.
  if (g_running) poll_->start();
  updateControls();
}

void BenchmarkDialog::loadCached() {
  have_ = advisor::load_cached_bench(this_key(), bench_);
  if (have_)
    status_->setText(tr("Measured %1 with %2 threads (cached in %3). Re-measure after changing "
                        "hardware or when the machine was busy then.")
                         .arg(QString::fromStdString(bench_.measured_at))
                         .arg(bench_.threads)
                         .arg(QString::fromStdString(advisor::bench_cache_path())));
  else
    status_->setText(tr("This machine has not been measured at %1 threads yet: Measure takes a "
                        "few seconds.")
                         .arg(resolved_threads(0)));
  if (!catalog_error_.isEmpty())
    status_->setText(status_->text() + "\n" + tr("GPU catalog: %1").arg(catalog_error_));
  fillTable();
}

bool BenchmarkDialog::measuring() const {
  return g_running;
}

bool BenchmarkDialog::anyMeasuring() {
  return g_running;
}

void BenchmarkDialog::waitForMeasurement() {
  worker().join();
}

void BenchmarkDialog::setBlocked(const QString& why) {
  blocked_ = why;
  updateControls();
}

void BenchmarkDialog::measure() {
  if (!blocked_.isEmpty()) return;
  bool expected = false;
  if (!g_running.compare_exchange_strong(expected, true)) return;  // one already runs
  {
    std::lock_guard<std::mutex> l(g_error_m);
    g_error.clear();
  }
  // A closed dialog does not wait for it; the result goes to the cache,
  // which is rewritten atomically. The previous worker has ended (g_running
  // was false), so this join does not wait.
  Worker& w = worker();
  w.join();
  static const bool joins_on_quit = [] {
    if (QCoreApplication* app = QCoreApplication::instance())
      QObject::connect(app, &QCoreApplication::aboutToQuit, app, [] { worker().join(); });
    return true;
  }();
  (void)joins_on_quit;
  w.thread = std::thread([] {
    try {
      // Measure at the count the key names (a sweep may have left 1 set);
      // runs are refused while this measures, so nothing else uses it.
      set_num_threads(resolved_threads(0));
      advisor::cpu_bench(true);
      // This machine's GPUs too (cuBLAS, cuDNN, copies; a few seconds each).
      for (const GpuInfo& g : list_gpus()) advisor::gpu_bench(g.index, true);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> l(g_error_m);
      g_error = QString::fromUtf8(e.what());
    }
    g_running = false;
  });
  status_->setText(gpus_.empty()
                       ? tr("Measuring GEMM, convolution, memory bandwidth and per-step overhead "
                            "(a few seconds)…")
                       : tr("Measuring GEMM, convolution, memory bandwidth and per-step overhead "
                            "here and on %n GPU(s) (a few seconds each)…",
                            nullptr, int(gpus_.size())));
  poll_->start();
  updateControls();
}

void BenchmarkDialog::poll() {
  if (g_running) return;
  poll_->stop();
  loadCached();
  std::lock_guard<std::mutex> l(g_error_m);
  if (!g_error.isEmpty()) status_->setText(tr("The benchmark failed: %1").arg(g_error));
  updateControls();
}

void BenchmarkDialog::updateControls() {
  const bool running = g_running;
  busy_->setVisible(running);
  measure_->setText(have_ ? tr("&Re-measure") : tr("&Measure"));
  measure_->setEnabled(!running && blocked_.isEmpty());
  measure_->setToolTip(!blocked_.isEmpty() ? blocked_
                       : running           ? tr("A measurement is running")
                                           : tr("Run the micro-benchmark again (Ctrl+R)"));
}

void BenchmarkDialog::fillTable() {
  table_->setRowCount(0);
  auto add = [&](const QString& name, const QStringList& values, bool bold) {
    const int r = table_->rowCount();
    table_->insertRow(r);
    auto* n = cell(name, bold);
    n->setTextAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    table_->setItem(r, kDevice, n);
    for (int c = 0; c < values.size(); ++c) table_->setItem(r, c + 1, cell(values[c], bold));
  };
  const QString here =
      (have_ ? tr("This machine: %1 (%2 threads, measured)") : tr("This machine: %1 (%2 threads)"))
          .arg(QString::fromStdString(have_ ? bench_.name : advisor::cpu_model_name()))
          .arg(have_ ? bench_.threads : resolved_threads(0));
  if (have_)
    add(here,
        {num(bench_.fp32_gflops), "—", num(bench_.conv_gflops), num(bench_.mem_bandwidth_gbs),
         humanBytes(double(available_memory_bytes())), "—"},
        true);
  else
    add(here,
        {tr("not measured"), "—", "—", "—", humanBytes(double(available_memory_bytes())), "—"},
        true);
  for (const GpuInfo& g : gpus_) {
    advisor::DeviceBench b;
    const QString name =
        QStringLiteral("cuda:%1 %2").arg(g.index).arg(QString::fromStdString(g.name));
    if (advisor::load_cached_bench(advisor::gpu_bench_key(g.index, g.name), b))
      add(tr("%1 (measured)").arg(name),
          {num(b.fp32_gflops), num(std::max(b.bf16_gflops, b.fp16_gflops)), num(b.conv_gflops),
           num(b.mem_bandwidth_gbs), humanBytes(double(g.total_bytes)), "—"},
          true);
    else
      add(name, {tr("not measured"), "—", "—", "—", humanBytes(double(g.total_bytes)), "—"}, true);
  }
  const QStringList featured = featuredGpus();
  for (const advisor::GpuSpec& g : catalog_) {
    const QString name = QString::fromStdString(g.name);
    if (!all_->isChecked() && !featured.contains(name)) continue;
    const double tensor = std::max(g.bf16_tflops, g.fp16_tflops);
    add(name + tr(" (datasheet)"),
        {num(g.fp32_tflops * 1e3), num(tensor * 1e3), "—", num(g.bandwidth_gbs),
         humanBytes(double(g.memory_bytes)), num(g.tdp_w)},
        false);
    table_->item(table_->rowCount() - 1, kDevice)->setToolTip(QString::fromStdString(g.source));
  }
}

}  // namespace dc::gui
