#pragma once
// The application window: the layer palette (left), the canvas (centre),
// the properties (right), the model summary and problems (bottom), menus
// and a toolbar with the standard shortcuts, and the project file's
// lifecycle (new, template, open, save, autosave and recovery). The window
// only wires panels together; editing lives in widgets::GraphEditor.
#include <deepcanvas/project.h>

#include <QMainWindow>
#include <QPointer>
#include <QString>
#include <functional>
#include <vector>

class QAction;
class QLabel;
class QMenu;
class QTabWidget;
class QUrl;

namespace dc {
class Plan;
}

namespace dc::widgets {
class CostOverlay;
class GraphEditor;
class LayerPalette;
class NodeView;
class PropertyEditor;
}  // namespace dc::widgets

namespace dc::gui {

class Autosaver;
class BenchmarkDialog;
class DeployDialog;
class DatasetPanel;
class ExperimentsPanel;
struct BestValue;
class InferencePanel;
class ProblemsPanel;
class PyTorchConsole;
class PyTorchRun;
struct PyTorchRunOptions;
class ProjectContext;
class StartPage;
class SummaryPanel;
class TrainingPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // What maybeSave() asks when there are unsaved changes.
  enum class Answer { Save, Discard, Cancel };
  // The central area's tabs, in order (Ctrl+1..5).
  enum class Mode { Model, Dataset, Training, Inference, Experiments };

  // Opening a project shows the whole network (Fit to Window) unless that
  // takes a zoom below kReadableZoom, where a layer's name and shape are too
  // small to read, and the network has at least kLargeNetworkLayers layers.
  // Then it opens at kReadableZoom on the part its user works on (the first
  // trainable layers after a frozen base, else the input), with the overview
  // map for the whole and a status bar hint naming Fit to Window. Smaller
  // networks open whole however small: the overview of a dozen layers is
  // worth more (the sample, 11 layers in one line, fits at about 36 % at
  // 1280×720, and opening it at its input left its last layers off-screen);
  // no bundled template has more than 23 layers, the transfer template's
  // base about 94. (auto_layout.cpp's 0.75 is another matter: the size down
  // to which a line is kept rather than wrapped, a comfortable one; 0.6 is
  // where a card's text is still legible, so more of the network shows.)
  static constexpr double kReadableZoom = 0.6;
  static constexpr int kLargeNetworkLayers = 40;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // File actions. Each returns false when it failed or was cancelled; a
  // failure is reported through the error handler and changes nothing.
  void newProject();
  bool openFile(const QString& path);
  bool newFromTemplate(const QString& path);
  bool saveFile(const QString& path);
  bool save();
  bool saveAs();
  // File > Export > ONNX Model: the network with the Inference tab's weights
  // (the last trained or opened ones), or freshly initialised weights when
  // there are none, said in the status bar. Asks for the path when empty.
  bool exportOnnx(QString path = {});
  // File > Import ONNX (and an .onnx dropped on the window): converts the
  // model into `project_path` (asked for when empty; a dropped model gets
  // MODEL.dcproj beside it, or MODEL_2.dcproj, ... when that exists) and its
  // weights beside it, lays it out for the canvas and opens it with those
  // weights in the Inference tab. Nothing is written when the import fails.
  bool importOnnx(QString model_path = {}, QString project_path = {});
  // File > Export > PyTorch Project: model.py, train.py (torchrun/DDP),
  // Dockerfile, Kubernetes manifests and README in an empty (or new) folder,
  // with the Inference tab's weights as weights.safetensors. Asks for the
  // folder when empty; a non-empty one is replaced only after asking.
  bool exportPyTorch(QString dir = {});
  // File > Open Run...: a train.py output folder into the Training tab's
  // plots and Runs table (followed live while it grows). Asks when empty.
  bool openRun(QString dir = {});
  // File > Run with PyTorch…: exports the project to the folder the dialog
  // asks for (remembered; an earlier export there is replaced after asking)
  // and starts its train.py on this machine (one process, or torchrun with
  // N), its output in the PyTorch Console dock and its metrics followed live
  // by the Training tab as a run. `preset` skips the dialog (tests,
  // scripts) and replaces the export folder without asking. False when
  // nothing was started (the reason reported; a missing torch is reported
  // later, by the check, in the console and through the error handler).
  bool runWithPyTorch(const PyTorchRunOptions* preset = nullptr);
  PyTorchRun* pytorchRun() const { return pytorch_run_; }
  PyTorchConsole* pytorchConsole() const { return pytorch_console_; }
  // Offers to restore what an earlier, crashed session autosaved.
  void offerRecovery();
  // Dropped files: the first .dcproj is opened, or the first .onnx is
  // imported (importOnnx). False when nothing was opened.
  bool openDropped(const QList<QUrl>& urls);
  // Newest first (the File → Open Recent menu and the start page).
  static QStringList recentFiles();

  // The project as it would be saved now (graph included).
  Project project() const;
  QString currentFile() const { return file_; }
  bool isModified() const;
  void selectAndCenter(int node_id);
  // Layer → Replace Head on the selected layer: a Dense with the loaded
  // dataset's classes (or the current output count) after it. The new
  // Dense's id, or -1 (reason in the status bar).
  NodeId replaceHead();

  widgets::GraphEditor* editor() const { return editor_; }
  widgets::LayerPalette* palette() const { return palette_; }
  widgets::PropertyEditor* properties() const { return properties_; }
  widgets::NodeView* view() const { return view_; }
  SummaryPanel* summary() const { return summary_; }
  widgets::CostOverlay* costOverlay() const { return cost_overlay_; }
  ProblemsPanel* problems() const { return problems_; }
  Autosaver* autosaver() const { return autosaver_; }
  ProjectContext* context() const { return ctx_; }
  DatasetPanel* datasetPanel() const { return dataset_panel_; }
  TrainingPanel* trainingPanel() const { return training_panel_; }
  // File → Export for Deployment…: opens (or raises) the dialog comparing
  // fp32, fp16 and int8 and writing one; it measures when asked.
  DeployDialog* openDeployDialog();
  // Help → Benchmark This Machine…: opens (or raises) the dialog; it
  // measures on the first visit and shows the cached result after.
  BenchmarkDialog* openBenchmark();
  // Help → Benchmark This Machine is measuring (runs are refused meanwhile).
  bool benchmarkMeasuring() const;
  InferencePanel* inferencePanel() const { return inference_panel_; }
  ExperimentsPanel* experimentsPanel() const { return experiments_panel_; }
  StartPage* startPage() const { return start_page_; }
  void showMode(Mode m);
  Mode mode() const;
  QAction* action(const QString& name) const;

  // Replaces message boxes (tests, scripted use).
  void setErrorHandler(std::function<void(const QString&)> f) { on_error_ = std::move(f); }
  void setConfirmHandler(std::function<Answer(const QString&)> f) { on_confirm_ = std::move(f); }
  const QString& lastError() const { return last_error_; }

 protected:
  void closeEvent(QCloseEvent* e) override;
  void changeEvent(QEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void createPanels();
  void createModes();
  void createModeActions(QMenu* view);
  void modeChanged(int index);
  void setDocksForModel(bool model);  // the docks step aside outside the Model tab
  QByteArray modelLayoutState();      // saveState() with the Model tab's docks
  void syncContext();                 // the project as edited -> the dashboard panels
  bool trainingActive() const;
  // Apply best: the best trial's settings and attributes as one undo step.
  QString applySweepValues(const std::vector<BestValue>& values, const QString& what);
  // Asks to stop a running training before `why` (e.g. "close the window");
  // false when the user keeps it running.
  bool confirmStopTraining(const QString& why);
  std::string settingsJson() const;  // the training settings as they would be saved
  void createActions();
  void createLayerActions();
  void createCostOverlay();  // main_window_overlay.cpp
  void addCostOverlayMenu(QMenu* view);
  void createMenus();
  void createHelpMenu();
  void createThemeMenu(QMenu* view);
  void createStartPage();
  void updateStartPage();
  void restoreLayout();
  void applyIcons();
  void setProject(Project p, const QString& file, bool modified);
  // Fits the opened network or shows its working part (kReadableZoom);
  // open_hint_ is then the status bar hint that says so, else empty.
  void showOpenedNetwork();
  bool maybeSave();
  void reportError(const QString& text);
  // The Inference tab's weights into plan (built from the project's graph),
  // or the seed's initialisation when it has none; returns which, in words.
  QString loadExportWeights(Plan& plan) const;
  // fresh: the seed's initialisation instead of loadExportWeights().
  bool writePyTorchExport(const QString& dir, bool force, bool fresh = false);
  void createPyTorchConsole();
  void addRecent(const QString& path);
  void fillRecentMenu();
  void updateTitle();
  void updateStatusCounts();
  QAction* makeAction(const QString& name, const QString& text, const QKeySequence& key,
                      const QString& icon = {});

  widgets::GraphEditor* editor_;
  widgets::NodeView* view_;
  widgets::LayerPalette* palette_ = nullptr;
  widgets::PropertyEditor* properties_ = nullptr;
  SummaryPanel* summary_ = nullptr;
  widgets::CostOverlay* cost_overlay_ = nullptr;
  ProblemsPanel* problems_ = nullptr;
  Autosaver* autosaver_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QMenu* view_menu_ = nullptr;
  QLabel* zoom_label_ = nullptr;
  QLabel* count_label_ = nullptr;
  StartPage* start_page_ = nullptr;

  QTabWidget* modes_ = nullptr;
  ProjectContext* ctx_ = nullptr;
  DatasetPanel* dataset_panel_ = nullptr;
  TrainingPanel* training_panel_ = nullptr;
  QPointer<BenchmarkDialog> benchmark_;
  QPointer<DeployDialog> deploy_;
  InferencePanel* inference_panel_ = nullptr;
  PyTorchRun* pytorch_run_ = nullptr;  // with its console dock, made on first use
  PyTorchConsole* pytorch_console_ = nullptr;
  ExperimentsPanel* experiments_panel_ = nullptr;
  bool docks_for_model_ = true;
  // Bumped when saved layouts must not be restored (1: saved on any tab,
  // possibly with the docks hidden).
  static constexpr int kLayoutVersion = 2;
  bool syncing_ = false;
  std::string saved_settings_;  // settingsJson() at the last open or save

  Project project_;  // everything but the graph, which the editor holds
  QString file_;
  QString open_hint_;             // see showOpenedNetwork()
  bool forced_modified_ = false;  // e.g. recovered: changed, but no undo history
  QString last_error_;
  std::function<void(const QString&)> on_error_;
  std::function<Answer(const QString&)> on_confirm_;
};

}  // namespace dc::gui
