// The Inference tab: its layout, the images (files, folders, camera) and
// their predictions and activations. The weights it predicts with are
// chosen in inference_weights.cpp.
#include "gui/inference_panel.h"

#include <deepcanvas/image_data.h>
#include "widgets/dialog_dirs.h"
#include "widgets/image_grid.h"
#include "widgets/saliency_view.h"
#include "widgets/top_k_bars.h"

#include <deepcanvas/errors.h>

#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QMimeData>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSplitter>
#include <QTime>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <numeric>

namespace dc::gui {

namespace {
// The engine's picture extensions as the file dialog's name filters (it
// matches them in any case).
QStringList image_filters() {
  QStringList f;
  for (const std::string& e : image_extensions()) f << "*" + QString::fromStdString(e);
  return f;
}
}  // namespace

InferencePanel::InferencePanel(ProjectContext* ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  setAcceptDrops(true);
  buildUi();
  connect(ctx_, &ProjectContext::weightsChanged, this, [this] {
    fillWeightChoices();
    if (use_checkpoint_) return;
    probe_stale_ = true;
    showWeightsInUse();
    updatePreprocessingText();  // the normalisation comes with the weights
    predictCurrent();
  });
  connect(ctx_, &ProjectContext::runCheckpointsChanged, this, &InferencePanel::fillWeightChoices);
  connect(ctx_, &ProjectContext::projectReplaced, this, &InferencePanel::resetForNewProject);
  connect(ctx_, &ProjectContext::projectChanged, this, [this] {
    probe_stale_ = true;
    updatePreprocessingText();  // the Input may have changed
    predictCurrent();
  });
  fillWeightChoices();
  showWeightsInUse();
  updatePreprocessingText();
}

InferencePanel::~InferencePanel() = default;

void InferencePanel::buildUi() {
  auto* root = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  open_ = new QPushButton(tr("Open images…"), this);
  open_dir_ = new QPushButton(tr("Open folder…"), this);
  camera_ = new QPushButton(tr("Camera"), this);
  camera_->setToolTip(tr("Take a picture with the first camera (OpenCV)"));
  weights_choice_ = new QComboBox(this);
  weights_choice_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  weights_choice_->setMinimumContentsLength(28);
  weights_choice_->setToolTip(
      tr("Which weights predict: the latest run's, the best or last checkpoint of each run, "
         "or a checkpoint file"));
  weights_label_ = new QLabel(this);
  weights_label_->setWordWrap(true);
  for (QWidget* w : {static_cast<QWidget*>(open_), static_cast<QWidget*>(open_dir_),
                     static_cast<QWidget*>(camera_)})
    bar->addWidget(w);
  bar->addSpacing(16);
  bar->addWidget(new QLabel(tr("Weights:"), this));
  bar->addWidget(weights_choice_, 1);
  root->addLayout(bar);
  root->addWidget(weights_label_);
  message_ = new QLabel(this);
  message_->setWordWrap(true);
  message_->setVisible(false);
  root->addWidget(message_);

  auto* split = new QSplitter(Qt::Horizontal, this);
  list_ = new widgets::ImageGrid(split, 72);
  list_->setMinimumWidth(180);
  auto* mid = new QWidget(split);
  auto* ml = new QVBoxLayout(mid);
  ml->setContentsMargins(0, 0, 0, 0);
  saliency_ = new widgets::SaliencyView(mid);
  preprocess_ = new QLabel(mid);
  preprocess_->setWordWrap(true);
  auto* op = new QHBoxLayout;
  op->addWidget(new QLabel(tr("Saliency overlay"), mid));
  opacity_ = new QSlider(Qt::Horizontal, mid);
  opacity_->setRange(0, 100);
  opacity_->setValue(70);
  op->addWidget(opacity_, 1);
  ml->addWidget(saliency_, 1);
  ml->addLayout(op);
  ml->addWidget(preprocess_);
  auto* right = new QWidget(split);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  rl->addWidget(new QLabel(tr("<b>Top 5</b>"), right));
  bars_ = new widgets::TopKBars(right);
  rl->addWidget(bars_);
  auto* lh = new QHBoxLayout;
  lh->addWidget(new QLabel(tr("<b>Activations</b>"), right));
  layer_ = new QComboBox(right);
  lh->addWidget(layer_, 1);
  rl->addLayout(lh);
  maps_ = new widgets::ImageGrid(right, 64);
  rl->addWidget(maps_, 1);
  vector_bars_ = new widgets::TopKBars(right);
  auto* vector_area = new QScrollArea(right);
  vector_area->setWidgetResizable(true);
  vector_area->setWidget(vector_bars_);
  vector_area->setVisible(false);
  vector_area_ = vector_area;
  rl->addWidget(vector_area, 1);
  split->addWidget(list_);
  split->addWidget(mid);
  split->addWidget(right);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 2);
  root->addWidget(split, 1);
  image_area_ = split;
  text_area_ = buildTextUi();
  text_area_->setVisible(false);
  root->addWidget(text_area_, 1);
  series_area_ = buildSeriesUi();
  series_area_->setVisible(false);
  root->addWidget(series_area_, 1);

  connect(open_, &QPushButton::clicked, this, [this] {
    QStringList files = QFileDialog::getOpenFileNames(
        this, tr("Open images"), imageDialogStart(),
        tr("Images (%1);;All files (*)").arg(image_filters().join(' ')));
    if (files.isEmpty()) return;
    widgets::rememberDialogChoice("inferenceImages", files.front());
    openPaths(files);
  });
  connect(open_dir_, &QPushButton::clicked, this, [this] {
    QString d =
        QFileDialog::getExistingDirectory(this, tr("Open a folder of images"), imageDialogStart());
    if (d.isEmpty()) return;
    // The folder's parent: the next folder is most likely its sibling (a
    // class folder beside this one).
    widgets::rememberDialogChoice("inferenceImages", QFileInfo(d).absolutePath());
    openPaths({d});
  });
  connect(weights_choice_, &QComboBox::activated, this, &InferencePanel::weightChoiceActivated);
  connect(camera_, &QPushButton::clicked, this, &InferencePanel::captureCamera);
  connect(list_, &widgets::ImageGrid::imageActivated, this,
          [this](int row, const QVariant&) { selectImage(row); });
  connect(opacity_, &QSlider::valueChanged, this,
          [this](int v) { saliency_->setOpacity(v / 100.0); });
  connect(layer_, &QComboBox::currentIndexChanged, this, &InferencePanel::showActivations);
}

QString InferencePanel::weightsSource() const {
  if (use_checkpoint_) return checkpoint_.source;
  const ModelWeights& w = ctx_->weights();
  return w.valid() ? w.source : tr("none yet (train the network or use a checkpoint)");
}

void InferencePanel::setMessage(const QString& text, bool error) {
  mismatch_shown_ = false;
  message_->setText(text);
  message_->setStyleSheet(error ? "QLabel { background:#fdecea; color:#611a15; border:1px solid "
                                  "#f5c2c0; border-radius:4px; padding:6px; }"
                                : "QLabel { background:#fff8e1; color:#5d4200; border-radius:4px;"
                                  " padding:6px; }");
  message_->setVisible(!text.isEmpty());
  if (!text.isEmpty()) Q_EMIT message(text);
}

QString InferencePanel::messageText() const {
  return message_->isHidden() ? QString() : message_->text();
}

QString InferencePanel::preprocessingText() const {
  return preprocess_->text();
}

bool InferencePanel::ensureProbe() {
  if (!probe_stale_ && probe_) return true;
  probe_.reset();
  const ModelWeights& w = use_checkpoint_ ? checkpoint_ : ctx_->weights();
  if (!w.valid()) return false;
  try {
    probe_ = std::make_unique<ModelProbe>(ctx_->project().graph, w.state, w.source.toStdString());
  } catch (const std::exception& e) {
    setMessage(tr("The weights do not fit the network: %1").arg(QString::fromUtf8(e.what())), true);
    mismatch_shown_ = true;
    return false;
  }
  // An edit undone (or redone) made them fit again: the banner must not stay.
  if (mismatch_shown_) setMessage({}, false);
  probe_stale_ = false;
  updatePreprocessingText();
  return true;
}

void InferencePanel::updatePreprocessingText() {
  showInputKind();
  const ModelWeights& w = use_checkpoint_ ? checkpoint_ : ctx_->weights();
  Shape in;
  try {
    in = probe_ ? probe_->input_shape() : Plan(ctx_->project().graph, 1).input_shape();
  } catch (const std::exception&) {
    preprocess_->setText(tr("The network is not valid yet."));
    return;
  }
  if (in.rank() != 3 || (in[0] != 1 && in[0] != 3)) {
    preprocess_->setText(tr("The network's Input is %1, not an image; this panel needs an "
                            "image input (1 or 3 channels).")
                             .arg(QString::fromStdString(in.str())));
    return;
  }
  const DatasetSpec& spec = ctx_->project().dataset;
  // Which normalisation predictCurrent applies, and where it comes from.
  const ImagePreprocess& pre = spec.preprocess;
  const auto list = [](const std::vector<float>& v) {
    QStringList parts;
    for (float x : v) parts << QString::number(x, 'f', 3);
    return parts.join(", ");
  };
  QString norm;
  if (int64_t(pre.mean.size()) == in[0]) {
    norm = tr("per channel (x/255 − (%1)) / (%2) (the project's preprocessing)")
               .arg(list(pre.mean), list(pre.std));
  } else if (!w.valid()) {
    norm = tr("from the weights, once there are some");
  } else if (w.mean == 0.f && w.stddev == 1.f) {
    // Statistics of 0 and 1 are none: say so rather than print an identity.
    norm = spec.path.empty()
               ? tr("nothing beyond x/255 (the project has no training set, so no statistics "
                    "apply)")
               : tr("nothing beyond x/255 (the weights were trained without normalisation)");
  } else if (!spec.path.empty()) {
    norm = tr("(x/255 − %1) / %2 (the training set's statistics)")
               .arg(w.mean, 0, 'f', 4)
               .arg(w.stddev, 0, 'f', 4);
  } else {
    norm = tr("(x/255 − %1) / %2 (the statistics stored with the weights; the project has no "
              "training set)")
               .arg(w.mean, 0, 'f', 4)
               .arg(w.stddev, 0, 'f', 4);
  }
  const QString resize =
      spec.is_images() && spec.crop_fraction < 1
          ? tr("resize to cover %1×%2 and crop the centre %3×%4 (the dataset's crop fraction %5)")
                .arg(qRound(double(in[2]) / spec.crop_fraction))
                .arg(qRound(double(in[1]) / spec.crop_fraction))
                .arg(in[2])
                .arg(in[1])
                .arg(spec.crop_fraction)
          : tr("resize to %1×%2 (area)").arg(in[2]).arg(in[1]);
  preprocess_->setText(tr("<b>Preprocessing</b> (from the Input layer %1): %2, %3, normalise %4")
                           .arg(QString::fromStdString(in.str()), resize,
                                in[0] == 1 ? tr("greyscale") : tr("RGB colour"), norm));
}

QString InferencePanel::imageDialogStart() const {
  const Project& p = ctx_->project();
  const QString data = p.dataset.is_images()
                           ? QString::fromStdString(resolve_project_file(p, p.dataset.path))
                           : QString();
  return widgets::dialogStart("inferenceImages",
                              QFileInfo::exists(data) ? data : QString::fromStdString(p.file));
}

QString InferencePanel::checkpointDialogStart() const {
  return widgets::dialogStart("checkpoints", QString::fromStdString(ctx_->project().file));
}

std::optional<Shape> InferencePanel::inputShapeTo(const QString& purpose) {
  try {
    return Plan(ctx_->project().graph, 1).input_shape();
  } catch (const std::exception& e) {
    setMessage(tr("The network must be valid to %1: %2").arg(purpose, e.what()), true);
    return std::nullopt;
  }
}

int InferencePanel::openPaths(const QStringList& paths) {
  const std::optional<Shape> input = inputShapeTo(tr("read images"));
  if (!input) return 0;
  const Shape& in = *input;
  QStringList files, notes;
  for (const QString& p : paths) {
    QFileInfo fi(p);
    if (fi.isDir()) {
      // The engine's listing, so a folder opens here as predict opens it.
      try {
        const std::string dir = QFileInfo(p).absoluteFilePath().toStdString();
        const std::vector<std::string> found = image_files_in(dir);
        // A whole dataset: say which folders to open instead of "no images"
        // (and open whatever else was dropped with it).
        if (found.empty())
          if (const std::string note = class_folders_note(dir); !note.empty())
            notes << tr("%1: open one of them, or choose the folder in the Dataset tab to train "
                        "and evaluate on it.")
                         .arg(QString::fromStdString(note));
        for (const std::string& f : found) files << QString::fromStdString(f);
      } catch (const std::exception& e) {
        setMessage(QString::fromUtf8(e.what()), true);
        return 0;
      }
    } else {
      files << p;
    }
  }
  const double crop = ctx_->project().dataset.inference_crop();
  QStringList bad;
  int added = 0, first = -1;
  for (const QString& f : files) {
    Image img;
    img.path = f;
    try {
      img.chw = read_image_chw(f.toStdString(), in, crop);
    } catch (const std::exception& e) {
      bad << QString::fromUtf8(e.what());
      continue;
    }
    addImage(f, std::move(img.chw), in);
    if (first < 0) first = int(images_.size()) - 1;
    ++added;
  }
  if (!bad.isEmpty())
    notes << tr("%1 file(s) could not be opened: %2")
                 .arg(bad.size())
                 .arg(bad.mid(0, 5).join("; ") + (bad.size() > 5 ? tr("; …") : QString()));
  if (!notes.isEmpty())
    setMessage(notes.join(' '), true);
  else if (files.isEmpty())
    setMessage(tr("No images found."), true);
  else
    setMessage({}, false);
  if (first >= 0) selectImage(first);
  return added;
}

void InferencePanel::addImage(const QString& path, std::vector<uint8_t> chw, const Shape& in) {
  Dataset one;
  one.sample_shape = in;
  one.pixels = chw;
  one.labels = {0};
  Image shown;
  shown.path = path;
  list_->addImage(sample_image(one, 0), listCaption(shown), path);
  Image img;
  img.path = path;
  img.chw = std::move(chw);
  images_.push_back(std::move(img));
}

bool InferencePanel::inspectSample(const InspectedSample& sample) {
  const std::optional<Shape> input = inputShapeTo(tr("inspect a sample"));
  if (!input) return false;
  const Shape& in = *input;
  if (showsSeries()) return inspectWindow(sample);
  if (!is_picture_shape(in) || sample.shape != in || int64_t(sample.chw.size()) != in.numel()) {
    setMessage(tr("%1 cannot be shown here: it is %2 and the Inference tab takes pictures at the "
                  "Input's shape, %3.")
                   .arg(sample.name, QString::fromStdString(sample.shape.str()),
                        QString::fromStdString(in.str())),
               true);
    return false;
  }
  // The listing's confidences came from these weights: predict with them.
  if (sample.weights && !useCheckpointWeights(*sample.weights, sample.checkpoint,
                                              runCheckpointLabel(sample.checkpoint)))
    return false;
  addImage(sample.name, sample.chw, in);
  images_.back().label = sample.true_class;
  // The list's captions are two short lines: the true class is in the
  // tooltip there, and under the picture.
  list_->item(list_->count() - 1)->setToolTip(imageName(images_.back()));
  setMessage({}, false);
  selectImage(int(images_.size()) - 1);
  return true;
}

bool InferencePanel::captureCamera() {
  try {
    Shape in = Plan(ctx_->project().graph, 1).input_shape();
    std::vector<uint8_t> chw = capture_camera_chw(0, in);
    addImage(tr("camera %1").arg(QTime::currentTime().toString("HH:mm:ss")), std::move(chw), in);
  } catch (const std::exception& e) {
    setMessage(tr("Camera: %1").arg(QString::fromUtf8(e.what())), true);
    return false;
  }
  setMessage({}, false);
  selectImage(int(images_.size()) - 1);
  return true;
}

void InferencePanel::selectImage(int row) {
  if (row < 0 || row >= int(images_.size())) return;
  current_ = row;
  {
    const QSignalBlocker block(list_);
    list_->setCurrentRow(row);
  }
  predictCurrent();
}

QString InferencePanel::imageName(const Image& img) const {
  const QString file = QFileInfo(img.path).fileName();
  return img.label < 0 ? file : tr("%1 (true: %2)").arg(file, className(img.label));
}

QString InferencePanel::listCaption(const Image& img) const {
  // Two lines that fit the grid's cell, cut where they are least needed
  // (a long file name in its middle, a long class name before its
  // percentage): wrapped instead, the percentage fell off the cell.
  const QFontMetrics fm(list_->font());
  const int w = list_->gridSize().width() - 8;
  const QString file = fm.elidedText(QFileInfo(img.path).fileName(), Qt::ElideMiddle, w);
  if (img.top < 0) return file;
  const QString pct = QString(" %1 %").arg(100.0 * img.prob, 0, 'f', 0);
  return file + "\n" +
         fm.elidedText(className(img.top), Qt::ElideRight, w - fm.horizontalAdvance(pct)) + pct;
}

QString InferencePanel::className(int i) const {
  const ModelWeights& w = use_checkpoint_ ? checkpoint_ : ctx_->weights();
  QStringList names = w.class_names.isEmpty() ? ctx_->classNames() : w.class_names;
  return i >= 0 && i < names.size() && !names[i].isEmpty() ? names[i] : tr("class %1").arg(i);
}

int InferencePanel::showTopClasses(const std::vector<float>& probs, widgets::TopKBars* bars) const {
  std::vector<int> order(probs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return probs[size_t(a)] > probs[size_t(b)]; });
  QVector<widgets::TopKBars::Entry> top;
  for (size_t k = 0; k < std::min<size_t>(5, order.size()); ++k)
    top.push_back({className(order[k]), probs[size_t(order[k])]});
  bars->setEntries(top);
  return order.empty() ? -1 : order.front();
}

void InferencePanel::predictCurrent() {
  probs_.clear();
  if (current_ < 0 || current_ >= int(images_.size())) return;
  Image& img = images_[size_t(current_)];
  const ModelWeights& w = use_checkpoint_ ? checkpoint_ : ctx_->weights();
  if (!ensureProbe()) {
    // No prediction: the caption and the list say only what the image is,
    // as the empty Top-5 does.
    saliency_->setCaption(imageName(img));
    if (auto* item = list_->item(current_)) item->setText(listCaption(img));
    img.top = -1;
    img.prob = 0;
    bars_->clear();
    maps_->clear();
    vector_bars_->clear();
    saliency_->setHeatmap({}, 0, 0);
    Dataset one;
    try {
      one.sample_shape = Plan(ctx_->project().graph, 1).input_shape();
    } catch (const std::exception&) {
      return;  // an invalid graph is the editor's to report
    }
    one.pixels = img.chw;
    one.labels = {0};
    saliency_->setImage(sample_image(one, 0));
    if (!w.valid()) setMessage(tr("No weights yet: train the network or use a checkpoint."), false);
    return;
  }
  const Shape in = probe_->input_shape();
  if (int64_t(img.chw.size()) != in.numel()) {
    setMessage(tr("%1 was read for another Input shape; open it again.").arg(img.path), true);
    return;
  }
  Tensor x(in.with_batch(1));
  float* px = x.f32();
  // A transfer model's project fixes the normalisation per channel (its
  // pretrained base's); others use the training set's mean and stddev.
  const ImagePreprocess& pre = ctx_->project().dataset.preprocess;
  const bool per_channel = in.rank() == 3 && int64_t(pre.mean.size()) == in[0];
  const size_t plane = size_t(in.numel() / std::max<int64_t>(1, in.rank() == 3 ? in[0] : 1));
  for (size_t i = 0; i < img.chw.size(); ++i)
    px[i] = per_channel ? (img.chw[i] / 255.f - pre.mean[i / plane]) / pre.std[i / plane]
                        : (img.chw[i] / 255.f - w.mean) / w.stddev;
  try {
    const Tensor& out = probe_->forward(x);
    const int n = int(out.numel());
    probs_ = softmax(out.f32(), n);
    img.top = showTopClasses(probs_, bars_);
    img.prob = probs_[size_t(img.top)];
    // Saliency: the largest |gradient| over channels at each pixel.
    Tensor g = probe_->input_gradient(img.top);
    const int c = int(in[0]), h = int(in[1]), wd = int(in[2]);
    std::vector<float> heat(size_t(h) * wd, 0.f);
    for (int k = 0; k < c; ++k)
      for (int i = 0; i < h * wd; ++i)
        heat[size_t(i)] = std::max(heat[size_t(i)], std::abs(g.f32()[size_t(k) * h * wd + i]));
    if (per_channel)  // the image as read, before normalisation
      saliency_->setImage(tensor_image(x.f32(), in, 0.f, 1.f, pre.mean, pre.std));
    else
      saliency_->setImage(tensor_image(x.f32(), in, w.mean, w.stddev));
    saliency_->setHeatmap(heat, wd, h);
    saliency_->setCaption(tr("%1 — %2 (%3 %)")
                              .arg(imageName(img), className(img.top))
                              .arg(100.0 * img.prob, 0, 'f', 1));
    if (auto* item = list_->item(current_)) item->setText(listCaption(img));
  } catch (const std::exception& e) {
    setMessage(tr("Inference failed: %1").arg(QString::fromUtf8(e.what())), true);
    return;
  }
  // Layer list: keep the user's choice across images.
  QString keep = layer_->currentText();
  {
    const QSignalBlocker block(layer_);
    layer_->clear();
    for (const auto& a : probe_->activations())
      layer_->addItem(QString("%1 (%2, %3)")
                          .arg(QString::fromStdString(a.name), QString::fromStdString(a.type),
                               QString::fromStdString(a.value->shape().without_batch().str())),
                      qlonglong(a.id));
    int i = layer_->findText(keep);
    layer_->setCurrentIndex(i >= 0 ? i : std::min(1, layer_->count() - 1));
  }
  showActivations();
  if (messageText().startsWith(tr("No weights"))) setMessage({}, false);
  Q_EMIT predicted(current_, img.top, img.prob);
}

void InferencePanel::showActivations() {
  maps_->clear();
  vector_bars_->clear();
  showActivationKind();
  if (!probe_ || layer_->currentIndex() < 0) return;
  const NodeId id = NodeId(layer_->currentData().toLongLong());
  for (const auto& a : probe_->activations()) {
    if (a.id != id) continue;
    const Shape s = a.value->shape().without_batch();
    const float* v = a.value->f32();
    if (s.rank() == 3) {  // C×H×W: one map per channel
      const int c = int(s[0]), h = int(s[1]), w = int(s[2]);
      for (int k = 0; k < std::min(c, 64); ++k) {
        std::vector<float> m(v + size_t(k) * h * w, v + size_t(k + 1) * h * w);
        maps_->addImage(widgets::heat_image(m, w, h), tr("ch %1").arg(k));
      }
    } else if (s.rank() == 1 && s[0] <= 512) {
      // A vector (Dense, the logits): one bar per value, named by class
      // when there is one value per class.
      const int n = int(s[0]);
      QStringList names = (use_checkpoint_ ? checkpoint_ : ctx_->weights()).class_names;
      if (names.isEmpty()) names = ctx_->classNames();
      float peak = 1e-12f;
      for (int i = 0; i < n; ++i) peak = std::max(peak, std::abs(v[i]));
      QVector<widgets::TopKBars::Entry> entries;
      for (int i = 0; i < n; ++i)
        entries.push_back({n == names.size() ? names[i] : tr("unit %1").arg(i),
                           std::abs(v[i]) / peak, QString::number(v[i], 'g', 4), v[i] < 0});
      vector_bars_->setEntries(entries);
    } else {  // a sequence or a long vector: one strip
      const int n = int(s.numel());
      std::vector<float> m(v, v + n);
      const int w = s.rank() == 2 ? int(s[1]) : n, h = s.rank() == 2 ? int(s[0]) : 1;
      maps_->addImage(widgets::heat_image(m, w, h), tr("%1 values").arg(n));
    }
    break;
  }
  showActivationKind();
}

void InferencePanel::showActivationKind() {
  const bool bars = !vector_bars_->entries().isEmpty();
  vector_area_->setVisible(bars);
  maps_->setVisible(!bars);
}

int InferencePanel::activationMapCount() const {
  return maps_->count() + int(vector_bars_->entries().size());
}

int InferencePanel::topClass() const {
  return current_ >= 0 ? images_[size_t(current_)].top : -1;
}
double InferencePanel::topProbability() const {
  return current_ >= 0 ? images_[size_t(current_)].prob : 0.0;
}
QString InferencePanel::topClassName() const {
  return topClass() >= 0 ? className(topClass()) : QString();
}

void InferencePanel::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void InferencePanel::dropEvent(QDropEvent* e) {
  QStringList paths;
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile()) paths << u.toLocalFile();
  if (!paths.isEmpty()) openPaths(paths);
  e->acceptProposedAction();
}

}  // namespace dc::gui
