#pragma once
// "Run with PyTorch…": the exported project's train.py started from the app
// on this machine, in one process or under torchrun, and the console that
// shows what it prints. PyTorchRun first checks that the chosen interpreter
// imports torch (and says how to install it when it does not), then starts
// train.py with QProcess; Stop terminates it and kills it when it does not
// end. The metrics it writes are followed by the Training tab
// (TrainingPanel::followRun), not here.
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTimer;

namespace dc::gui {

struct PyTorchRunOptions {
  QString python = QStringLiteral("/usr/bin/python3");
  QString export_dir;  // holds train.py
  QString out_dir;     // train.py --out
  QString data;        // train.py --data ("": the export's default)
  int processes = 1;   // > 1: torchrun with that many processes
  QString device = QStringLiteral("cpu");
  int epochs = 1;
  qint64 batch = 32;  // per process
  int max_steps = 0;  // 0: whole epochs
  // Start from the seed's initialisation (a fresh run) rather than the
  // Inference tab's weights (what File > Export writes, to fine-tune).
  bool fresh_weights = false;
};

class PyTorchRun : public QObject {
  Q_OBJECT
 public:
  explicit PyTorchRun(QObject* parent = nullptr);
  // Terminates a run still going (and its torchrun workers), then kills it.
  ~PyTorchRun() override;

  // Checks the interpreter, then starts train.py; false (with why) when a
  // run is already going. Everything else is reported through signals.
  bool start(const PyTorchRunOptions& o, QString* why = nullptr);
  // SIGTERM (torchrun passes it on to its workers), SIGKILL after
  // killAfterMs() when the process is still there.
  void stop();
  bool running() const;
  // A line of ours in the console ("[DeepCanvas] text").
  void note(const QString& text) { Q_EMIT output(QStringLiteral("[DeepCanvas] ") + text + "\n"); }
  const PyTorchRunOptions& options() const { return opts_; }
  // train.py's command line (program first), as started.
  QStringList commandLine() const;
  void setKillAfterMs(int ms) { kill_after_ms_ = ms; }
  int killAfterMs() const { return kill_after_ms_; }

 signals:
  void output(const QString& text);       // what the process printed, and our notes
  void checking(const QString& python);   // the interpreter check starts
  void launched(const QString& out_dir);  // the check passed; train.py runs
  // The check failed (no interpreter, no torch, no CUDA): nothing was started.
  void failed(const QString& why);
  // train.py ended: ok when it exited with 0; result says how, in words.
  void finished(bool ok, const QString& result);

 private:
  void onCheckDone(int code, QProcess::ExitStatus status);
  void onDone(int code, QProcess::ExitStatus status);
  void launch();

  PyTorchRunOptions opts_;
  QProcess* check_ = nullptr;
  QProcess* proc_ = nullptr;
  QTimer* kill_timer_ = nullptr;
  int kill_after_ms_ = 5000;
  bool stopping_ = false;
};

// The console dock's contents: a status line, Stop, and the process output.
class PyTorchConsole : public QWidget {
  Q_OBJECT
 public:
  explicit PyTorchConsole(PyTorchRun* run, QWidget* parent = nullptr);
  QString text() const;
  QString status() const;
  QPushButton* stopButton() const { return stop_; }

 private:
  void append(const QString& text);
  void setStatus(const QString& text, bool running);

  PyTorchRun* run_;
  QLabel* status_;
  QPushButton* stop_;
  QPushButton* clear_;
  QPlainTextEdit* log_;
};

}  // namespace dc::gui
