// The Dataset tab: its layout, the source and augmentation choices and the
// loading (on a worker thread). What it shows of a loaded dataset is in
// dataset_view.cpp.
#include "gui/dataset_panel.h"

#include <deepcanvas/image_data.h>
#include "widgets/dialog_dirs.h"
#include "widgets/image_grid.h"
#include "widgets/series_plot.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/settings.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QUndoCommand>
#include <QUndoStack>
#include <QVBoxLayout>
#include <algorithm>
#include <utility>
#include <vector>

namespace dc::gui {

namespace {
using Kind = DatasetSource::Kind;

bool needs_path(Kind k) {
  return k == Kind::Idx || k == Kind::ImageFolder || k == Kind::ImageCsv || k == Kind::Csv ||
         k == Kind::Text;
}
bool is_folder(Kind k) {
  return k == Kind::Idx || k == Kind::ImageFolder;
}
bool is_images(Kind k) {
  return k == Kind::ImageFolder || k == Kind::ImageCsv;
}

// A dataset chosen in the panel, as recorded in the project: redo and undo
// put one record or the other back (and load it); the push itself changes
// nothing, the choice has been loaded and recorded already.
class DatasetSpecCommand : public QUndoCommand {
 public:
  DatasetSpecCommand(DatasetPanel* panel, DatasetSpec before, DatasetSpec after,
                     const QString& text)
      : QUndoCommand(text), panel_(panel), before_(std::move(before)), after_(std::move(after)) {}
  void redo() override {
    if (!std::exchange(pushed_, true)) return;
    panel_->restoreDatasetSpec(after_);
  }
  void undo() override { panel_->restoreDatasetSpec(before_); }

 private:
  DatasetPanel* panel_;
  DatasetSpec before_, after_;
  bool pushed_ = false;
};
}  // namespace

DatasetPanel::DatasetPanel(ProjectContext* ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  buildUi();
  connect(ctx_, &ProjectContext::datasetChanged, this, &DatasetPanel::showDataset);
  connect(ctx_, &ProjectContext::datasetSpecChanged, this, &DatasetPanel::specChanged);
  connect(ctx_, &ProjectContext::projectReplaced, this, [this] {
    auto_loaded_ = false;
    spec_shown_ = false;
    ++generation_;
  });
  connect(ctx_, &ProjectContext::projectChanged, this, [this] {
    // Another project: its dataset in the widgets (once: the editor's
    // changes come this way too, and must not reset what the user typed).
    if (!std::exchange(spec_shown_, true)) showSource(datasetSource(ctx_->project().dataset));
    showAugmentOptions(ctx_->augmentation());  // the project's, not an edit
    val_split_->setValue(ctx_->project().training.val_split);
    normalize_->setCurrentIndex(ctx_->project().training.normalize ? 0 : 1);
    showMessages();
    followInput();
  });
  connect(ctx_, &ProjectContext::busyChanged, this, [this](bool busy) {
    for (QWidget* w :
         {static_cast<QWidget*>(load_), static_cast<QWidget*>(kind_),
          static_cast<QWidget*>(val_split_), static_cast<QWidget*>(normalize_),
          static_cast<QWidget*>(hflip_), static_cast<QWidget*>(vflip_), static_cast<QWidget*>(pad_),
          static_cast<QWidget*>(rotate_), static_cast<QWidget*>(translate_),
          static_cast<QWidget*>(brightness_), static_cast<QWidget*>(resized_crop_),
          static_cast<QWidget*>(jitter_), static_cast<QWidget*>(suggest_)})
      w->setEnabled(!busy);
    load_->setToolTip(busy ? tr("Stop the training run to load another dataset") : QString());
  });
  showSource(datasetSource(ctx_->project().dataset));
  spec_shown_ = true;
  showAugmentOptions(ctx_->augmentation());
  if (ctx_->hasDataset()) showDataset();
}

void DatasetPanel::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  autoLoad();
}

void DatasetPanel::autoLoad() {
  if (auto_loaded_ || loading() || ctx_->hasDataset() || ctx_->busy()) return;
  if (ctx_->project().dataset.path.empty()) return;  // nothing named: the user chooses
  auto_loaded_ = true;  // once: after a failure the message stays until the user acts
  auto_loading_ = true;
  loadSourceAsync({});
  summary_->setText(tr("Loading the project's dataset (%1)…")
                        .arg(QString::fromStdString(ctx_->project().dataset.path)));
}

DatasetPanel::~DatasetPanel() {
  if (worker_.joinable()) worker_.join();
}

void DatasetPanel::buildUi() {
  auto* root = new QHBoxLayout(this);
  auto* split = new QSplitter(Qt::Horizontal, this);
  root->addWidget(split);

  auto* left = new QWidget(split);
  auto* ll = new QVBoxLayout(left);
  auto* src = new QGroupBox(tr("Source"), left);
  auto* sf = new QFormLayout(src);
  kind_ = new QComboBox(src);
  kind_->addItem(tr("The project's dataset"), int(Kind::Project));
  kind_->addItem(tr("Bundled sample (Fashion-MNIST subset)"), int(Kind::Sample));
  kind_->addItem(tr("IDX files (MNIST layout)"), int(Kind::Idx));
  kind_->addItem(tr("Image folder (one subfolder per class)"), int(Kind::ImageFolder));
  kind_->addItem(tr("Image list (CSV of path,label)"), int(Kind::ImageCsv));
  kind_->addItem(tr("CSV series"), int(Kind::Csv));
  kind_->addItem(tr("Text corpus"), int(Kind::Text));
  if (!image_decoding_supported())
    for (Kind k : {Kind::ImageFolder, Kind::ImageCsv}) {
      const int i = kind_->findData(int(k));
      kind_->setItemData(i, tr("This build has no OpenCV"), Qt::ToolTipRole);
      kind_->setItemData(i, false, Qt::UserRole - 1);  // disables the item
    }
  path_ = new QLineEdit(src);
  browse_ = new QPushButton(tr("Browse…"), src);
  auto* prow = new QHBoxLayout;
  prow->addWidget(path_, 1);
  prow->addWidget(browse_);
  window_ = new QSpinBox(src);
  window_->setRange(1, 4096);
  window_->setValue(64);
  window_->setToolTip(tr("Steps per sample (CSV rows or text characters)"));
  target_ = new QLineEdit(src);
  target_->setObjectName("datasetTarget");
  target_->setPlaceholderText(tr("the last column"));
  target_->setToolTip(
      tr("The CSV column that holds each row's class (a whole number from 0); "
         "the other columns are the features"));
  test_fraction_ = new QDoubleSpinBox(src);
  test_fraction_->setRange(0.0, 0.9);
  test_fraction_->setSingleStep(0.05);
  test_fraction_->setValue(0.2);
  test_fraction_->setToolTip(
      tr("Share kept as the test set (images without a test/ folder: per class, seeded; the end "
         "of a CSV series or text)"));
  crop_fraction_ = new QDoubleSpinBox(src);
  crop_fraction_->setRange(0.1, 1.0);
  crop_fraction_->setSingleStep(0.025);
  crop_fraction_->setDecimals(3);
  crop_fraction_->setValue(0.875);
  crop_fraction_->setToolTip(
      tr("Evaluation (and the Inference tab) resize a picture to the Input's size divided by "
         "this, then crop its centre (torchvision's Resize + CenterCrop: 0.875 is 256 → 224); "
         "1 keeps the whole picture"));
  loading_ = new QComboBox(src);
  loading_->addItem(tr("Automatic (in memory when it fits)"), "auto");
  loading_->addItem(tr("In memory"), "memory");
  loading_->addItem(tr("Streamed from disk"), "stream");
  loading_->setToolTip(
      tr("In memory: every picture decoded once before training. Streamed: decoded by worker "
         "threads as batches need them, with a cache, for datasets larger than memory"));
  bad_images_ = new QComboBox(src);
  bad_images_->addItem(tr("Skip and count"), false);
  bad_images_->addItem(tr("Stop with an error"), true);
  bad_images_->setToolTip(
      tr("A corrupt, truncated or unreadable image: left out and named, or an error that stops "
         "loading or the run"));
  load_ = new QPushButton(tr("Load"), src);
  sf->addRow(tr("Kind"), kind_);
  sf->addRow(tr("Path"), prow);
  sf->addRow(tr("Window"), window_);
  sf->addRow(tr("Target column"), target_);
  sf->addRow(tr("Test fraction"), test_fraction_);
  sf->addRow(tr("Crop fraction"), crop_fraction_);
  sf->addRow(tr("Loading"), loading_);
  sf->addRow(tr("Bad images"), bad_images_);
  sf->addRow(load_);
  ll->addWidget(src);

  auto* prep = new QGroupBox(tr("Preparation"), left);
  auto* pf = new QFormLayout(prep);
  val_split_ = new QDoubleSpinBox(prep);
  val_split_->setRange(0.0, 0.5);
  val_split_->setSingleStep(0.05);
  val_split_->setValue(ctx_->project().training.val_split);
  val_split_->setToolTip(tr("Share of the training set held out for validation"));
  normalize_ = new QComboBox(prep);
  normalize_->addItem(tr("Standardise (training-set mean and std)"));
  normalize_->addItem(tr("Scale to [0, 1] only"));
  normalize_->setCurrentIndex(ctx_->project().training.normalize ? 0 : 1);
  pf->addRow(tr("Validation split"), val_split_);
  pf->addRow(tr("Normalisation"), normalize_);
  ll->addWidget(prep);

  // The samples per class and split under the choices that made them, so
  // the right side's height goes to the samples and the augmentation.
  table_ = new QTableWidget(0, 3, left);
  table_->setHorizontalHeaderLabels({tr("Class"), tr("Training"), tr("Test")});
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  ll->addWidget(table_, 1);

  auto* right = new QWidget(split);
  auto* rl = new QVBoxLayout(right);
  // The augmentation's options sit beside its preview, under the samples:
  // stacked under the source, with the class table above the samples, they
  // made the tab taller than a 1280x720 screen's window (a scroll bar, the
  // preview cut off at the bottom).
  auto* aug = new QGroupBox(tr("Augmentation (image data)"), right);
  aug_box_ = aug;
  auto* af = new QGridLayout(aug);
  // Ranges and help from the engine's settings table, as the CLI has them.
  auto help = [](const char* key) {
    const SettingSpec* sp = find_setting(key);
    return sp ? QString::fromStdString(sp->attr.help + " (" + setting_range_text(*sp) + ")")
              : QString();
  };
  auto max_of = [](const char* key, double fallback) {
    const SettingSpec* sp = find_setting(key);
    return sp ? sp->attr.max : fallback;
  };
  hflip_ = new QCheckBox(tr("Horizontal flip"), aug);
  hflip_->setToolTip(help("augment.flip"));
  vflip_ = new QCheckBox(tr("Vertical flip"), aug);
  vflip_->setToolTip(help("augment.vflip"));
  pad_ = new QSpinBox(aug);
  pad_->setRange(0, int(max_of("augment.crop_padding", 16)));
  pad_->setSuffix(tr(" px"));
  pad_->setToolTip(help("augment.crop_padding"));
  rotate_ = new QDoubleSpinBox(aug);
  rotate_->setRange(0, max_of("augment.rotate", 180));
  rotate_->setSuffix(tr("°"));
  rotate_->setToolTip(help("augment.rotate"));
  translate_ = new QDoubleSpinBox(aug);
  translate_->setRange(0, max_of("augment.translate", 0.5));
  translate_->setSingleStep(0.05);
  translate_->setToolTip(help("augment.translate"));
  brightness_ = new QDoubleSpinBox(aug);
  brightness_->setRange(0, max_of("augment.brightness", 1));
  brightness_->setSingleStep(0.05);
  brightness_->setToolTip(help("augment.brightness"));
  resized_crop_ = new QCheckBox(tr("Random resized crop (image files)"), aug);
  resized_crop_->setToolTip(
      help("augment.resized_crop").isEmpty()
          ? tr("From the whole picture: a random area of 8–100 % and aspect 3/4–4/3, resized to "
               "the Input (torchvision's RandomResizedCrop)")
          : help("augment.resized_crop"));
  jitter_ = new QDoubleSpinBox(aug);
  jitter_->setRange(0, max_of("augment.color_jitter", 1));
  jitter_->setSingleStep(0.05);
  jitter_->setToolTip(help("augment.color_jitter").isEmpty()
                          ? tr("Brightness, contrast and saturation factors in [1 - j, 1 + j], "
                               "on the picture (torchvision's ColorJitter)")
                          : help("augment.color_jitter"));
  // Two label-and-field pairs a row: the picture-level draws first, then
  // the ones on the batch.
  auto pair = [&](int row, int col, const QString& label, QWidget* field) {
    auto* l = new QLabel(label, aug);
    l->setBuddy(field);
    l->setToolTip(field->toolTip());
    af->addWidget(l, row, 2 * col);
    af->addWidget(field, row, 2 * col + 1);
  };
  af->addWidget(resized_crop_, 0, 0, 1, 2);
  pair(0, 1, tr("Colour jitter ±"), jitter_);
  af->addWidget(hflip_, 1, 0, 1, 2);
  af->addWidget(vflip_, 1, 2, 1, 2);
  pair(2, 0, tr("Crop with padding"), pad_);
  pair(2, 1, tr("Rotation ±"), rotate_);
  pair(3, 0, tr("Translation ±"), translate_);
  pair(3, 1, tr("Brightness ±"), brightness_);
  auto* where = new QLabel(tr("Drawn afresh for every training batch, on the CPU or the GPU; "
                              "evaluation sees the images as they are."),
                           aug);
  where->setWordWrap(true);
  where->setStyleSheet("color: palette(mid);");
  af->addWidget(where, 4, 0, 1, 4);
  af->setColumnStretch(1, 1);
  af->setColumnStretch(3, 1);
  aug->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);

  summary_ = new QLabel(tr("No dataset loaded."), right);
  summary_->setWordWrap(true);
  suggest_ = new QPushButton(right);
  suggest_->setVisible(false);
  connect(suggest_, &QPushButton::clicked, this, [this] {
    const Shape& s = ctx_->imageReport().suggested_input;
    if (s.rank() == 3) Q_EMIT inputShapeRequested(s.dims());
  });
  load_progress_ = new QProgressBar(right);
  load_progress_->setRange(0, 0);
  load_progress_->setMaximumHeight(8);
  load_progress_->setTextVisible(false);
  load_progress_->setVisible(false);
  message_ = new QLabel(right);
  message_->setWordWrap(true);
  message_->setTextFormat(Qt::RichText);
  message_->setVisible(false);
  thumbs_ = new widgets::ImageGrid(right, 56);
  auto* preview_box = new QWidget(right);
  preview_box_ = preview_box;
  auto* pl = new QVBoxLayout(preview_box);
  pl->setContentsMargins(0, 0, 0, 0);
  auto* prev_head = new QHBoxLayout;
  auto* prev_title = new QLabel(tr("<b>Augmentation preview</b> (click a sample above to choose "
                                   "it)"),
                                preview_box);
  prev_title->setWordWrap(true);
  prev_head->addWidget(prev_title, 1);
  reroll_ = new QPushButton(tr("New draw"), preview_box);
  prev_head->addWidget(reroll_);
  preview_ = new widgets::ImageGrid(preview_box, 64);
  pl->addLayout(prev_head);
  pl->addWidget(preview_, 1);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(aug, 3);
  bottom->addWidget(preview_box, 2);
  rl->addWidget(summary_);
  auto* suggest_row = new QHBoxLayout;
  suggest_row->addWidget(suggest_);
  suggest_row->addStretch(1);
  rl->addLayout(suggest_row);
  rl->addWidget(load_progress_);
  rl->addWidget(message_);
  rl->addWidget(new QLabel(tr("<b>Samples</b>"), right));
  rl->addWidget(thumbs_, 1);
  text_samples_ = new QPlainTextEdit(right);
  text_samples_->setReadOnly(true);
  text_samples_->setLineWrapMode(QPlainTextEdit::NoWrap);
  text_samples_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text_samples_->setVisible(false);
  rl->addWidget(text_samples_, 1);
  series_plot_ = new widgets::SeriesPlot(right);
  series_plot_->setObjectName("seriesPlot");
  series_plot_->setVisible(false);
  rl->addWidget(series_plot_, 1);
  rl->addLayout(bottom);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(1, 2);
  split->setSizes({340, 700});

  connect(kind_, &QComboBox::currentIndexChanged, this, &DatasetPanel::kindChanged);
  connect(load_, &QPushButton::clicked, this, &DatasetPanel::loadFromWidgets);
  connect(browse_, &QPushButton::clicked, this, [this] {
    Kind k = Kind(kind_->currentData().toInt());
    // What the path box names (relative names from the project's folder),
    // else the folder of the last dataset chosen, else the project's.
    const QString typed = QString::fromStdString(
        resolve_project_file(ctx_->project(), path_->text().trimmed().toStdString()));
    const QString start =
        !typed.isEmpty() && QFileInfo::exists(typed)
            ? typed
            : widgets::dialogStart("dataset", QString::fromStdString(ctx_->project().file));
    QString p = is_folder(k) ? QFileDialog::getExistingDirectory(this, tr("Dataset folder"), start)
                             : QFileDialog::getOpenFileName(this, tr("Dataset file"), start);
    // A folder's parent: the next dataset is most likely beside this one.
    widgets::rememberDialogChoice("dataset",
                                  is_folder(k) && !p.isEmpty() ? QFileInfo(p).absolutePath() : p);
    if (!p.isEmpty()) path_->setText(p);
  });
  connect(val_split_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    ctx_->project().training.val_split = v;
    Q_EMIT settingsChanged();
  });
  connect(normalize_, &QComboBox::currentIndexChanged, this, [this](int i) {
    ctx_->project().training.normalize = i == 0;
    Q_EMIT settingsChanged();
  });
  for (auto* c : {hflip_, vflip_, resized_crop_})
    connect(c, &QCheckBox::toggled, this, &DatasetPanel::optionsChanged);
  connect(pad_, &QSpinBox::valueChanged, this, &DatasetPanel::optionsChanged);
  for (auto* s : {rotate_, translate_, brightness_, jitter_})
    connect(s, &QDoubleSpinBox::valueChanged, this, &DatasetPanel::optionsChanged);
  connect(reroll_, &QPushButton::clicked, this, [this] {
    ++preview_seed_;
    refreshPreview();
  });
  connect(thumbs_, &widgets::ImageGrid::imageActivated, this, [this](int, const QVariant& data) {
    preview_index_ = data.toInt();
    refreshPreview();
  });
}

void DatasetPanel::kindChanged() {
  Kind k = Kind(kind_->currentData().toInt());
  path_->setEnabled(needs_path(k));
  browse_->setEnabled(needs_path(k));
  window_->setEnabled(k == Kind::Csv || k == Kind::Text);
  target_->setEnabled(k == Kind::Csv);
  test_fraction_->setEnabled(is_images(k) || k == Kind::Csv || k == Kind::Text);
  for (QWidget* w : {static_cast<QWidget*>(crop_fraction_), static_cast<QWidget*>(loading_),
                     static_cast<QWidget*>(bad_images_)})
    w->setEnabled(is_images(k));
  path_->setPlaceholderText(is_folder(k) ? tr("a folder") : needs_path(k) ? tr("a file") : "");
}

AugmentConfig DatasetPanel::augmentOptions() const {
  // The project's, so settings the panel has no control for are kept.
  AugmentConfig a = ctx_->augmentation();
  a.flip = hflip_->isChecked();
  a.vflip = vflip_->isChecked();
  a.crop_padding = pad_->value();
  a.rotate = rotate_->value();
  a.translate = translate_->value();
  a.brightness = brightness_->value();
  a.resized_crop = resized_crop_->isChecked();
  a.color_jitter = jitter_->value();
  return a;
}

void DatasetPanel::setAugmentOptions(const AugmentConfig& a) {
  showAugmentOptions(a);
  optionsChanged();
}

void DatasetPanel::showAugmentOptions(const AugmentConfig& a) {
  // One change, not six: each widget's signal would publish a half-set state.
  const QSignalBlocker b1(hflip_), b2(vflip_), b3(pad_), b4(rotate_), b5(translate_),
      b6(brightness_), b7(resized_crop_), b8(jitter_);
  hflip_->setChecked(a.flip);
  vflip_->setChecked(a.vflip);
  pad_->setValue(a.crop_padding);
  rotate_->setValue(a.rotate);
  translate_->setValue(a.translate);
  brightness_->setValue(a.brightness);
  resized_crop_->setChecked(a.resized_crop);
  jitter_->setValue(a.color_jitter);
  refreshPreview();
}

void DatasetPanel::optionsChanged() {
  ctx_->setAugmentation(augmentOptions());
  refreshPreview();
  Q_EMIT settingsChanged();  // saved with the project
}

DatasetSource DatasetPanel::sourceFromWidgets() const {
  DatasetSource s;
  s.kind = Kind(kind_->currentData().toInt());
  s.path = path_->text().trimmed();
  s.window = window_->value();
  s.target = target_->text().trimmed();
  s.test_fraction = test_fraction_->value();
  s.crop_fraction = crop_fraction_->value();
  s.loading = loading_->currentData().toString();
  s.bad_images_are_errors = bad_images_->currentData().toBool();
  return s;
}

void DatasetPanel::showSource(const DatasetSource& s) {
  {
    const QSignalBlocker block(kind_);
    const int i = kind_->findData(int(s.kind));
    if (i >= 0) kind_->setCurrentIndex(i);
  }
  path_->setText(s.path);
  window_->setValue(int(s.window));
  target_->setText(s.target);
  test_fraction_->setValue(s.test_fraction);
  crop_fraction_->setValue(s.crop_fraction);
  const int l = loading_->findData(s.loading);
  loading_->setCurrentIndex(l >= 0 ? l : 0);
  bad_images_->setCurrentIndex(s.bad_images_are_errors ? 1 : 0);
  kindChanged();
}

void DatasetPanel::specChanged(const DatasetSpec& before) {
  if (undoing_) return;
  const DatasetSpec& after = ctx_->project().dataset;
  const QString what = tr("Choose dataset %1")
                           .arg(after.path.rfind("sample:", 0) == 0
                                    ? tr("(bundled sample)")
                                    : QFileInfo(QString::fromStdString(after.path)).fileName());
  if (undo_) undo_->push(new DatasetSpecCommand(this, before, after, what));
  Q_EMIT settingsChanged();  // saved with the project
}

void DatasetPanel::restoreDatasetSpec(const DatasetSpec& spec) {
  undoing_ = true;
  ctx_->setDatasetSpec(spec);
  undoing_ = false;
  showSource(datasetSource(spec));
  Q_EMIT settingsChanged();
  // The data follows the record, unless a run reads it now (the next load
  // reads the record then).
  if (!ctx_->busy() && !spec.path.empty()) loadSourceAsync({});
}

void DatasetPanel::loadFromWidgets() {
  const DatasetSource s = sourceFromWidgets();
  if (needs_path(s.kind) && s.path.isEmpty()) {
    showMessages(tr("Choose a %1 first.").arg(is_folder(s.kind) ? tr("folder") : tr("file")));
    return;
  }
  loadSourceAsync(s);
}

void DatasetPanel::loadSourceAsync(const DatasetSource& source) {
  if (worker_.joinable()) return;  // one load at a time; the button is disabled meanwhile
  load_->setEnabled(false);
  load_progress_->setVisible(true);
  summary_->setText(
      tr("Loading %1…").arg(source.path.isEmpty() ? kind_->currentText() : source.path));
  Project project = ctx_->project();  // the worker reads a copy, never the live project
  const uint64_t generation = generation_;
  worker_ = std::thread([this, source, project, generation] {
    auto loaded = std::make_shared<LoadedDataset>();
    QString error;
    try {
      *loaded = ProjectContext::readDataset(project, source);
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    // Queued to this panel: dropped by Qt if it is gone (the destructor joins first).
    QMetaObject::invokeMethod(
        this,
        [this, source, loaded, error, generation] {
          if (worker_.joinable()) worker_.join();
          finishLoad(source, error.isEmpty() ? loaded.get() : nullptr, error,
                     generation != generation_);
        },
        Qt::QueuedConnection);
  });
}

void DatasetPanel::followInput() {
  const std::shared_ptr<Dataset> train = ctx_->trainSet();
  if (!train || !train->images || ctx_->busy() || loading()) return;
  const Graph& g = ctx_->project().graph;
  const std::vector<NodeId> inputs = g.inputs();
  if (inputs.size() != 1) return;
  const NodeShape in = g.infer_shapes()[inputs.front()];
  if (!in.ok()) return;
  const Shape& s = *in.shape;
  // Shapes a picture can be read at; others are the preflight's to name.
  if (!picture_shape(s) || s == train->sample_shape) return;
  if (std::exchange(followed_shape_, s) == s) return;
  loadSourceAsync(ctx_->datasetSource());
  summary_->setText(tr("Reading the pictures again at the Input's new shape, %1…")
                        .arg(QString::fromStdString(s.str())));
}

void DatasetPanel::finishLoad(const DatasetSource& source, LoadedDataset* loaded,
                              const QString& read_error, bool stale) {
  load_->setEnabled(!ctx_->busy());
  load_progress_->setVisible(false);
  const bool automatic = std::exchange(auto_loading_, false);
  if (stale) {
    // Another project was opened meanwhile (a project named on the command
    // line while the tab showed the new project's sample): this data is not
    // its, and applying it would also change its dataset record. Its own is
    // loaded instead.
    showDataset();
    if (isVisible()) autoLoad();
    return;
  }
  if (automatic && ctx_->hasDataset()) {
    // Start loaded the same data meanwhile (and may be training on it).
    showDataset();
    return;
  }
  QString error = read_error;
  if (loaded) {
    try {
      ctx_->applyDataset(source, std::move(*loaded));
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
  }
  if (!error.isEmpty()) {
    showDataset();  // the summary of the dataset that stays
    showMessages(tr("Could not load the dataset: %1").arg(error));
    Q_EMIT loadFailed(error);
    return;
  }
  showSource(datasetSource(ctx_->project().dataset));
  Q_EMIT datasetLoaded();
  followInput();  // the Input may have changed again while this load ran
}

bool DatasetPanel::loadSource(const DatasetSource& source) {
  QApplication::setOverrideCursor(Qt::WaitCursor);
  QString error;
  try {
    ctx_->loadDataset(source);  // emits datasetChanged -> showDataset on success
  } catch (const std::exception& e) {
    error = QString::fromUtf8(e.what());
  }
  QApplication::restoreOverrideCursor();
  if (!error.isEmpty()) {
    // The previous dataset stays loaded: nothing is lost by a bad choice.
    showMessages(tr("Could not load the dataset: %1").arg(error));
    Q_EMIT loadFailed(error);
    return false;
  }
  showSource(datasetSource(ctx_->project().dataset));
  Q_EMIT datasetLoaded();
  return true;
}

}  // namespace dc::gui
