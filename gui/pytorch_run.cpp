// Run with PyTorch…: the interpreter check, train.py under QProcess (or
// torchrun), Stop, and the console that shows it (see pytorch_run.h).
#include "gui/pytorch_run.h"

#include <QCoreApplication>
#include <QDir>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QTimer>
#include <QVBoxLayout>

namespace dc::gui {

namespace {

// Run by the chosen interpreter before train.py: exit 3 when torch (or
// numpy) cannot be imported, 4 when torchrun's module is missing, 5 when
// CUDA was asked for and torch sees no GPU. Prints torch's version.
constexpr const char* kCheck = R"(import sys
try:
    import numpy, torch
except Exception as e:
    print(f"{type(e).__name__}: {e}")
    sys.exit(3)
if int(sys.argv[1]) > 1:
    try:
        import torch.distributed.run
    except Exception as e:
        print(f"{type(e).__name__}: {e}")
        sys.exit(4)
if sys.argv[2] == "cuda" and not torch.cuda.is_available():
    print(torch.__version__)
    sys.exit(5)
print(torch.__version__)
)";

QString lastLine(const QByteArray& out) {
  const QStringList lines = QString::fromUtf8(out).trimmed().split('\n');
  return lines.isEmpty() ? QString() : lines.last().trimmed();
}

}  // namespace

PyTorchRun::PyTorchRun(QObject* parent) : QObject(parent) {
  kill_timer_ = new QTimer(this);
  kill_timer_->setSingleShot(true);
  connect(kill_timer_, &QTimer::timeout, this, [this] {
    if (!proc_ || proc_->state() == QProcess::NotRunning) return;
    Q_EMIT output(tr("\n[DeepCanvas] still running %1 s after Stop: killing it\n")
                      .arg(kill_after_ms_ / 1000.0));
    proc_->kill();
  });
}

PyTorchRun::~PyTorchRun() {
  // QProcess's own destructor sends SIGKILL, which would leave torchrun's
  // workers running; SIGTERM first lets torchrun end them.
  if (check_) check_->kill();
  if (proc_ && proc_->state() != QProcess::NotRunning) {
    disconnect(proc_, nullptr, this, nullptr);
    proc_->terminate();
    if (!proc_->waitForFinished(3000)) proc_->kill();
    proc_->waitForFinished(1000);
  }
}

bool PyTorchRun::running() const {
  // check_ lives from start() until the check has ended (or failed to start).
  return check_ != nullptr || (proc_ && proc_->state() != QProcess::NotRunning);
}

QStringList PyTorchRun::commandLine() const {
  QStringList args{opts_.python};
  if (opts_.processes > 1) {
    // torchrun's module run by the chosen interpreter (the torchrun on PATH
    // may belong to another Python). One node whose rendezvous store takes
    // a free port (localhost:0): torch 1.13's --standalone always binds
    // 29400, so a second run at the same time (another window, a test) joined
    // or broke the first. --redirects 2 --tee 1 keeps Debian's torch 1.13
    // launcher from crashing on Python 3.11 when it redirects output.
    args << "-m"
         << "torch.distributed.run"
         << "--nnodes=1"
         << "--rdzv_backend=c10d"
         << "--rdzv_endpoint=localhost:0"
         << QStringLiteral("--rdzv_id=deepcanvas-%1").arg(QCoreApplication::applicationPid())
         << QStringLiteral("--nproc_per_node=%1").arg(opts_.processes) << "--redirects"
         << "2"
         << "--tee"
         << "1"
         << "--log_dir" << QDir(opts_.out_dir).filePath("logs");
  } else {
    args << "-u";  // unbuffered: lines reach the console as they are printed
  }
  args << "train.py";
  if (!opts_.data.isEmpty()) args << "--data" << opts_.data;
  args << "--out" << opts_.out_dir << "--epochs" << QString::number(opts_.epochs) << "--batch"
       << QString::number(opts_.batch) << "--device" << opts_.device;
  if (opts_.max_steps > 0) args << "--max-steps" << QString::number(opts_.max_steps);
  return args;
}

bool PyTorchRun::start(const PyTorchRunOptions& o, QString* why) {
  if (running()) {
    if (why) *why = tr("a PyTorch run is still going; stop it first");
    return false;
  }
  opts_ = o;
  stopping_ = false;
  delete check_;
  check_ = new QProcess(this);
  check_->setProcessChannelMode(QProcess::MergedChannels);
  connect(check_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    const QString why =
        tr("cannot start the Python interpreter '%1' (%2). Choose an installed python3 in "
           "Run with PyTorch… (Debian/Ubuntu: sudo apt install python3 python3-torch).")
            .arg(opts_.python, check_->errorString());
    check_->deleteLater();
    check_ = nullptr;
    note(why);
    Q_EMIT failed(why);
  });
  connect(check_, &QProcess::finished, this, &PyTorchRun::onCheckDone);
  // Started from the event loop, so a failure is always reported after
  // start() returned (callers connect first, act on signals only).
  QTimer::singleShot(0, check_, [this] {
    if (stopping_) {  // Stop before the check began
      check_->deleteLater();
      check_ = nullptr;
      note(tr("stopped before train.py started"));
      Q_EMIT failed(tr("stopped before train.py started"));
      return;
    }
    Q_EMIT checking(opts_.python);
    note(tr("checking that %1 imports torch…").arg(opts_.python));
    check_->start(opts_.python, {"-c", QString::fromUtf8(kCheck), QString::number(opts_.processes),
                                 opts_.device});
  });
  return true;
}

void PyTorchRun::onCheckDone(int code, QProcess::ExitStatus status) {
  const QByteArray out = check_->readAll();
  check_->deleteLater();
  check_ = nullptr;
  if (stopping_) {
    Q_EMIT output(tr("[DeepCanvas] stopped before train.py started\n"));
    Q_EMIT failed(tr("stopped before train.py started"));
    return;
  }
  const QString said = lastLine(out);
  QString why;
  if (status != QProcess::NormalExit) {
    why = tr("the Python interpreter '%1' crashed while importing torch").arg(opts_.python);
  } else if (code == 3 || (code != 0 && code != 4 && code != 5)) {
    why = tr("'%1' cannot import PyTorch (%2). Install it: sudo apt install python3-torch "
             "(Debian/Ubuntu), or make a virtual environment with "
             "`pip install -r %3` and choose its bin/python here.")
              .arg(opts_.python, said.isEmpty() ? tr("exit code %1").arg(code) : said,
                   QDir::toNativeSeparators(QDir(opts_.export_dir).filePath("requirements.txt")));
  } else if (code == 4) {
    why = tr("'%1' has torch but not torch.distributed.run (%2), which %3 processes need; "
             "run with 1 process or install a complete PyTorch")
              .arg(opts_.python, said)
              .arg(opts_.processes);
  } else if (code == 5) {
    why = tr("torch %1 in '%2' sees no CUDA GPU; choose the cpu device (or a PyTorch built "
             "with CUDA)")
              .arg(said, opts_.python);
  }
  if (!why.isEmpty()) {
    note(why);
    Q_EMIT failed(why);
    return;
  }
  Q_EMIT output(tr("[DeepCanvas] torch %1\n").arg(said));
  launch();
}

void PyTorchRun::launch() {
  delete proc_;
  proc_ = new QProcess(this);
  proc_->setProcessChannelMode(QProcess::MergedChannels);
  proc_->setWorkingDirectory(opts_.export_dir);
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("PYTHONUNBUFFERED", "1");  // also for torchrun's workers
  proc_->setProcessEnvironment(env);
  connect(proc_, &QProcess::readyRead, this,
          [this] { Q_EMIT output(QString::fromUtf8(proc_->readAll())); });
  connect(proc_, &QProcess::finished, this, &PyTorchRun::onDone);
  connect(proc_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    Q_EMIT output(tr("[DeepCanvas] could not start train.py: %1\n").arg(proc_->errorString()));
    Q_EMIT finished(false, tr("not started: %1").arg(proc_->errorString()));
  });
  const QStringList cmd = commandLine();
  Q_EMIT output(QStringLiteral("$ cd %1 && %2\n")
                    .arg(QDir::toNativeSeparators(opts_.export_dir), cmd.join(' ')));
  QDir().mkpath(opts_.out_dir);
  proc_->start(cmd.first(), cmd.mid(1));
  Q_EMIT launched(opts_.out_dir);
}

void PyTorchRun::stop() {
  if (check_) {
    stopping_ = true;
    if (check_->state() != QProcess::NotRunning) check_->kill();
    return;
  }
  if (!proc_ || proc_->state() == QProcess::NotRunning) return;
  stopping_ = true;
  Q_EMIT output(tr("\n[DeepCanvas] stopping (SIGTERM)…\n"));
  proc_->terminate();
  kill_timer_->start(kill_after_ms_);
}

void PyTorchRun::onDone(int code, QProcess::ExitStatus status) {
  kill_timer_->stop();
  if (proc_->bytesAvailable() > 0) Q_EMIT output(QString::fromUtf8(proc_->readAll()));
  QString result;
  bool ok = false;
  if (stopping_) {
    result = tr("stopped");
  } else if (status == QProcess::CrashExit) {
    result = tr("crashed");
  } else if (code == 0) {
    result = tr("finished");
    ok = true;
  } else {
    result = tr("failed (exit code %1)").arg(code);
  }
  QString note = tr("\n[DeepCanvas] train.py %1").arg(result);
  if (!ok && opts_.processes > 1)
    note += tr("; the workers' error output is in %1")
                .arg(QDir::toNativeSeparators(QDir(opts_.out_dir).filePath("logs")));
  Q_EMIT output(note + "\n");
  Q_EMIT finished(ok, result);
}

PyTorchConsole::PyTorchConsole(PyTorchRun* run, QWidget* parent) : QWidget(parent), run_(run) {
  auto* col = new QVBoxLayout(this);
  col->setContentsMargins(4, 4, 4, 4);
  auto* row = new QHBoxLayout;
  status_ = new QLabel(tr("No PyTorch run yet: File > Run with PyTorch…"), this);
  status_->setObjectName("pytorchStatus");
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName("pytorchStop");
  stop_->setToolTip(
      tr("End the PyTorch run (SIGTERM, then SIGKILL after %1 s)").arg(run_->killAfterMs() / 1000));
  stop_->setEnabled(false);
  clear_ = new QPushButton(tr("Clear"), this);
  clear_->setToolTip(tr("Empty the console"));
  row->addWidget(status_, 1);
  row->addWidget(clear_);
  row->addWidget(stop_);
  col->addLayout(row);
  log_ = new QPlainTextEdit(this);
  log_->setObjectName("pytorchLog");
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);  // a long run's step lines stay bounded
  log_->setLineWrapMode(QPlainTextEdit::NoWrap);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  col->addWidget(log_, 1);

  connect(stop_, &QPushButton::clicked, run_, &PyTorchRun::stop);
  connect(clear_, &QPushButton::clicked, log_, &QPlainTextEdit::clear);
  connect(run_, &PyTorchRun::output, this, &PyTorchConsole::append);
  connect(run_, &PyTorchRun::checking, this, [this](const QString& python) {
    setStatus(tr("Checking that %1 imports torch…").arg(python), true);
  });
  connect(run_, &PyTorchRun::launched, this, [this](const QString& out) {
    setStatus(tr("Running: %1 process(es) on %2, output in %3")
                  .arg(run_->options().processes)
                  .arg(run_->options().device, QDir::toNativeSeparators(out)),
              true);
  });
  connect(run_, &PyTorchRun::failed, this,
          [this](const QString& why) { setStatus(tr("Not started: %1").arg(why), false); });
  connect(run_, &PyTorchRun::finished, this, [this](bool, const QString& result) {
    setStatus(tr("train.py %1 (%2)").arg(result, QDir::toNativeSeparators(run_->options().out_dir)),
              false);
  });
}

void PyTorchConsole::append(const QString& text) {
  QScrollBar* bar = log_->verticalScrollBar();
  const bool at_end = bar->value() == bar->maximum();
  log_->moveCursor(QTextCursor::End);
  log_->insertPlainText(text);
  if (at_end) bar->setValue(bar->maximum());  // follow unless the user scrolled up
}

void PyTorchConsole::setStatus(const QString& text, bool running) {
  status_->setText(text);
  stop_->setEnabled(running);
}

QString PyTorchConsole::text() const {
  return log_->toPlainText();
}
QString PyTorchConsole::status() const {
  return status_->text();
}

}  // namespace dc::gui
