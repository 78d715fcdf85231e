#include "gui/project_context.h"

#include "widgets/live_plot.h"
#include "widgets/series_plot.h"

#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/settings.h>
#include <deepcanvas/trainer.h>

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFileInfo>
#include <QPainter>
#include <QPolygonF>
#include <algorithm>
#include <cctype>
#include <set>

namespace dc::gui {

std::vector<uint8_t> sample_chw(const Dataset& d, int64_t index) {
  const Shape& s = d.sample_shape;
  if ((d.pixels.empty() && !d.images) || index < 0 || index >= d.size()) return {};
  std::vector<uint8_t> chw(size_t(s.numel()));
  if (d.images)
    d.images->sample(index, 0, chw.data());
  else
    std::copy_n(d.pixels.data() + index * s.numel(), s.numel(), chw.data());
  return chw;
}

namespace {

// A series window as a small line chart: each feature (up to 8, in the
// plots' colours) over the window's rows, scaled together to the window's
// range, so listed windows can be told apart at a glance.
QImage series_image(const Dataset& d, int64_t index) {
  const int64_t T = d.sample_shape[0], F = d.sample_shape[1];
  std::vector<float> v(size_t(T * F));
  try {
    d.copy_values(index, 1, v.data());
  } catch (const std::exception&) {
    return {};
  }
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const float span = *hi - *lo > 0 ? *hi - *lo : 1.f;
  constexpr int kW = 96, kH = 64, kPad = 3;
  QImage img(kW, kH, QImage::Format_RGB32);
  img.fill(Qt::white);
  QPainter p(&img);
  p.setRenderHint(QPainter::Antialiasing);
  for (int64_t f = 0; f < std::min<int64_t>(F, widgets::SeriesPlot::kMaxFeatures); ++f) {
    QPolygonF line;
    for (int64_t t = 0; t < T; ++t)
      line << QPointF(kPad + (kW - 2 * kPad) * (T > 1 ? double(t) / double(T - 1) : 0.5),
                      kH - kPad - (kH - 2 * kPad) * (v[size_t(t * F + f)] - *lo) / span);
    p.setPen(QPen(widgets::LivePlot::runColor(int(f)), 1.2));
    p.drawPolyline(line);
  }
  return img;
}

}  // namespace

QImage sample_image(const Dataset& d, int64_t index) {
  const Shape& s = d.sample_shape;
  if (index < 0 || index >= d.size()) return {};
  if (is_series(d)) return series_image(d, index);
  if (d.pixels.empty() && !d.images) return {};
  int c = 1, h = 0, w = 0;
  if (is_picture_shape(s)) {
    c = int(s[0]);
    h = int(s[1]);
    w = int(s[2]);
  } else if (s.rank() == 2) {
    h = int(s[0]);
    w = int(s[1]);
  } else {
    return {};
  }
  // A file's pixels are decoded; pixels in memory are read in place.
  std::vector<uint8_t> decoded;
  if (d.images) decoded = sample_chw(d, index);
  const uint8_t* px = d.images ? decoded.data() : d.pixels.data() + index * s.numel();
  QImage img(w, h, c == 1 ? QImage::Format_Grayscale8 : QImage::Format_RGB888);
  for (int y = 0; y < h; ++y) {
    uchar* line = img.scanLine(y);
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) line[x * c + k] = px[k * h * w + y * w + x];
  }
  return img;
}

QImage tensor_image(const float* chw, const Shape& s, float mean, float stddev,
                    const std::vector<float>& channel_mean, const std::vector<float>& channel_std) {
  if (!is_picture_shape(s)) return {};
  const int c = int(s[0]), h = int(s[1]), w = int(s[2]);
  const bool per_channel =
      int(channel_mean.size()) == c && channel_std.size() == channel_mean.size();
  QImage img(w, h, c == 1 ? QImage::Format_Grayscale8 : QImage::Format_RGB888);
  for (int y = 0; y < h; ++y) {
    uchar* line = img.scanLine(y);
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        const float m = per_channel ? channel_mean[size_t(k)] : mean;
        const float sd = per_channel ? channel_std[size_t(k)] : stddev;
        float v = (chw[k * h * w + y * w + x] * sd + m) * 255.f;
        line[x * c + k] = uchar(std::clamp(v, 0.f, 255.f) + 0.5f);
      }
  }
  return img;
}

ModelWeights weights_from_checkpoint(const QString& path) {
  CheckpointInfo ck = read_checkpoint(path.toStdString());
  ModelWeights w;
  w.state = std::move(ck.model);
  try {
    w.mean = std::stof(ck.metadata.at("mean"));
    w.stddev = std::stof(ck.metadata.at("stddev"));
  } catch (const std::exception&) {
    throw IoError(path.toStdString() +
                  ": checkpoint metadata lacks the input normalisation (mean/stddev)");
  }
  auto it = ck.metadata.find("class_names");
  if (it != ck.metadata.end()) {
    auto names = nlohmann::json::parse(it->second, nullptr, false);
    if (names.is_array())
      for (auto& n : names)
        if (n.is_string()) w.class_names << QString::fromStdString(n.get<std::string>());
  }
  w.source = QFileInfo(path).fileName() + QObject::tr(" (epoch %1)").arg(ck.epoch);
  return w;
}

namespace {

bool is_file_kind(DatasetSource::Kind k) {
  using K = DatasetSource::Kind;
  return k == K::Idx || k == K::ImageFolder || k == K::ImageCsv || k == K::Csv || k == K::Text;
}

QString project_dir(const std::string& file) {
  return file.empty() ? QString()
                      : QFileInfo(QString::fromStdString(file)).absoluteDir().absolutePath();
}

// Relative to the project's folder when inside it, else absolute; names
// the engine resolves itself ("fashion-mnist", "sample:NAME") as they are.
std::string recorded_path(const QString& given, const std::string& project_file) {
  if (given.isEmpty() || given == "fashion-mnist" || given.startsWith("sample:"))
    return given.toStdString();
  const QString dir = project_dir(project_file);
  const QString abs = QDir::cleanPath(QDir::isAbsolutePath(given) || dir.isEmpty()
                                          ? QFileInfo(given).absoluteFilePath()
                                          : dir + "/" + given);
  if (dir.isEmpty()) return abs.toStdString();
  const QString rel = QDir(dir).relativeFilePath(abs);
  if (rel == ".." || rel.startsWith("../") || QDir::isAbsolutePath(rel)) return abs.toStdString();
  return (rel.isEmpty() ? QString(".") : rel).toStdString();
}

}  // namespace

DatasetSpec datasetSpec(const DatasetSource& source, const Project& project) {
  using K = DatasetSource::Kind;
  DatasetSpec s = project.dataset;
  switch (source.kind) {
    case K::Project:
      return s;
    case K::Sample:
      s.kind = "idx";
      s.path = "sample:fashion-mnist-subset";
      return s;
    case K::Idx:
      s.kind = "idx";
      break;
    case K::ImageFolder:
    case K::ImageCsv:
      s.kind = source.kind == K::ImageFolder ? "image_folder" : "image_csv";
      s.test_fraction = source.test_fraction;
      s.crop_fraction = source.crop_fraction;
      s.loading = source.loading.toStdString();
      s.bad_images_are_errors = source.bad_images_are_errors;
      break;
    case K::Csv:
      s.kind = "csv_sequence";
      s.window = source.window;
      s.target = source.target.toStdString();
      s.test_fraction = source.test_fraction;
      break;
    case K::Text:
      s.kind = "text";
      s.window = source.window;
      s.test_fraction = source.test_fraction;
      break;
  }
  if (is_file_kind(source.kind)) {
    if (source.path.trimmed().isEmpty()) throw IoError("no dataset path given");
    s.path = recorded_path(source.path.trimmed(), project.file);
  }
  return s;
}

DatasetSource datasetSource(const DatasetSpec& spec) {
  using K = DatasetSource::Kind;
  DatasetSource s;
  s.path = QString::fromStdString(spec.path);
  s.test_fraction = spec.test_fraction;
  s.window = spec.window;
  s.target = QString::fromStdString(spec.target);
  s.crop_fraction = spec.crop_fraction;
  s.loading = QString::fromStdString(spec.loading);
  s.bad_images_are_errors = spec.bad_images_are_errors;
  if (spec.path == "sample:fashion-mnist-subset") {
    s.kind = K::Sample;
    s.path.clear();
  } else if (spec.path.empty() || spec.path.rfind("sample:", 0) == 0) {
    s.kind = K::Project;
  } else if (spec.kind == "image_folder") {
    s.kind = K::ImageFolder;
  } else if (spec.kind == "image_csv") {
    s.kind = K::ImageCsv;
  } else if (spec.kind == "csv_sequence") {
    s.kind = K::Csv;
  } else if (spec.kind == "text") {
    s.kind = K::Text;
  } else if (spec.kind == "idx") {
    s.kind = K::Idx;
  } else {
    s.kind = K::Project;
  }
  return s;
}

bool sameSpec(const DatasetSpec& a, const DatasetSpec& b) {
  // The file's own form: every field the project saves, compared.
  Project pa, pb;
  pa.dataset = a;
  pb.dataset = b;
  return project_to_json(pa) == project_to_json(pb);
}

QString skippedFilesText(const std::vector<SkippedFile>& files, size_t named) {
  if (files.empty()) return {};
  QStringList names;
  for (size_t i = 0; i < files.size() && i < named; ++i)
    names << QObject::tr("%1 (%2)").arg(QString::fromStdString(files[i].path),
                                        QString::fromStdString(files[i].why));
  QString text = QObject::tr("%n file(s) skipped: ", nullptr, int(files.size())) + names.join(", ");
  if (files.size() > named) text += QObject::tr(" and %1 more").arg(files.size() - named);
  return text;
}

QString badImagesText(const Dataset* d) {
  if (!d || !d->images) return {};
  const BadImageLog log = d->images->bad();
  if (log.count <= 0) return {};
  QString text = QObject::tr(
      "%n image(s) turned out bad while training read them and were "
      "skipped (black): ",
      nullptr, int(log.count));
  QStringList names;
  for (size_t i = 0; i < log.files.size() && i < 5; ++i)
    names << QObject::tr("%1 (%2)").arg(QString::fromStdString(log.files[i].path),
                                        QString::fromStdString(log.files[i].why));
  text += names.join(", ");
  if (log.count > int64_t(names.size()))
    text += QObject::tr(" and %1 more").arg(log.count - int64_t(names.size()));
  return text;
}

namespace {

// "training.epochs" as the app shows the setting: its label in the
// Training tab ("the Training tab's “epochs”"). Keys have dots of their own
// ("training.optimizer.beta1"): the longest one the settings table knows.
std::string with_app_names(std::string m) {
  static const std::string kPrefix = "training.";
  auto key_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  };
  for (size_t at = m.find(kPrefix); at != std::string::npos; at = m.find(kPrefix, at + 1)) {
    const size_t begin = at + kPrefix.size();
    size_t end = begin;
    while (end < m.size() && key_char(m[end])) ++end;
    const SettingSpec* spec = nullptr;
    while (end > begin && !(spec = find_setting(m.substr(begin, end - begin)))) {
      const size_t dot = m.rfind('.', end - 1);
      end = dot == std::string::npos || dot < begin ? begin : dot;
    }
    if (!spec) continue;
    const std::string named = "the Training tab's \u201c" + spec->label + "\u201d";
    m.replace(at, end - at, named);
    at += named.size() - 1;
  }
  return m;
}

// One sentence: a capital first letter and a full stop.
QString sentence(const std::string& m) {
  QString s = QString::fromStdString(with_app_names(m)).trimmed();
  if (s.isEmpty()) return s;
  s[0] = s[0].toUpper();
  if (!s.endsWith('.') && !s.endsWith('?') && !s.endsWith('!')) s += '.';
  return s;
}

}  // namespace

QString appProblemText(const RunProblem& problem) {
  using K = RunProblem::Kind;
  const QString text = sentence(problem.message);
  switch (problem.kind) {
    case K::Memory:
      if (problem.suggested_batch == 0)
        return text + QLatin1Char(' ') +
               QObject::tr("Remove layers or make them narrower in the editor.");
      return text + QLatin1Char(' ') +
             QObject::tr("Lower the batch size in the Training tab's Run settings.");
    case K::Output:
      if (problem.subject == "checkpoint folder" && !problem.reason.empty())
        return QObject::tr(
                   "The checkpoint folder %1 cannot be written to (%2). Choose a writable "
                   "folder in the Training tab's Checkpoints box.")
            .arg(QString::fromStdString(problem.path), QString::fromStdString(problem.reason));
      if (problem.subject == "sweep state" && !problem.reason.empty())
        return QObject::tr(
                   "The sweep's state file %1 cannot be written (%2). Save the project in a "
                   "writable folder (File → Save As…): the state file goes beside it.")
            .arg(QString::fromStdString(problem.path), QString::fromStdString(problem.reason));
      return text;
    case K::Device:
      if (problem.subject == "training.precision")
        return text + QLatin1Char(' ') +
               QObject::tr(
                   "Choose fp32 in the Training tab's Run settings, or a GPU in its "
                   "Device box.");
      if (problem.subject == "training.device")
        return text + QLatin1Char(' ') +
               (problem.warning
                    ? QObject::tr("Choose the CPU in the Training tab's Device box to train "
                                  "there without this note.")
                    : QObject::tr("Choose the CPU or another GPU in the Training tab's Device "
                                  "box."));
      return text;
    case K::Data:
      if (problem.subject == "dataset.path")
        return QObject::tr("The project names no dataset. Choose one in the Dataset tab.");
      if (problem.subject == "dataset")
        return QObject::tr("No dataset is loaded. Choose one in the Dataset tab.");
      return text;
    case K::Settings:
    case K::Network:
      return text;
  }
  return text;
}

ProjectContext::ProjectContext(Project project, QObject* parent)
    : QObject(parent), project_(std::move(project)) {}

std::unique_ptr<ProjectContext> ProjectContext::load(const QString& path, QObject* parent) {
  return std::make_unique<ProjectContext>(load_project(path.toStdString()), parent);
}

void ProjectContext::setProject(Project p) {
  project_ = std::move(p);
  Q_EMIT projectChanged();
}

void ProjectContext::replaceProject(Project p) {
  if (busy_) throw Error("a training run is using this project; stop it before replacing it");
  source_ = {};
  images_ = {};
  thumbnails_.clear();
  train_.reset();
  test_.reset();
  description_.clear();
  warnings_.clear();
  weights_ = {};
  chosen_.reset();
  run_checkpoints_.clear();
  Q_EMIT projectReplaced();
  setProject(std::move(p));
  Q_EMIT datasetChanged();
  Q_EMIT weightsChanged();
  Q_EMIT weightsInUseChanged();
  Q_EMIT runCheckpointsChanged();
}

void ProjectContext::loadDataset(const DatasetSource& source) {
  if (busy_) throw Error("a training run is using the dataset; stop it before loading another");
  applyDataset(source, readDataset(project_, source));
}

QString ProjectContext::loadDatasetIfNone(const DatasetSource& source) {
  if (hasDataset()) return {};
  try {
    loadDataset(source);
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

LoadedDataset ProjectContext::readDataset(const Project& project, const DatasetSource& source) {
  // One loader for every kind, the engine's, on a copy of the project whose
  // dataset is the source's record: the app reads what the CLI would read.
  Project p = project;
  p.dataset = datasetSpec(source, project);
  ProjectData d = load_project_dataset(p);
  LoadedDataset out;
  out.spec = p.dataset;
  out.images = std::move(d.images);
  out.description = QString::fromStdString(describe_dataset(out.spec, d));
  // A shared project's dataset may lead outside its folder; a folder the
  // user has just chosen needs no such warning.
  if (source.kind == DatasetSource::Kind::Project && !d.note.empty())
    out.warnings << QString::fromStdString(d.note);
  if (const QString skipped = skippedFilesText(out.images.list.skipped); !skipped.isEmpty())
    out.warnings << skipped;
  if (const auto& empty = out.images.list.empty_classes; !empty.empty()) {
    QStringList names;
    for (const auto& n : empty) names << QString::fromStdString(n);
    out.warnings
        << tr("Folders without a usable image, left out of the classes: %1").arg(names.join(", "));
  }
  out.data = std::move(d.data);
  // Thumbnails: the first few of every class, so each label is seen.
  const Dataset& train = out.data.train;
  if (!train.pixels.empty() || train.images) {
    constexpr int kPerClass = 6;
    std::vector<int> shown;
    for (int64_t i = 0; i < train.size() && out.thumbnails.size() < 120; ++i) {
      const int32_t l = train.labels[size_t(i)];
      if (l < 0) continue;
      if (shown.size() <= size_t(l)) shown.resize(size_t(l) + 1, 0);
      if (shown[size_t(l)] >= kPerClass) continue;
      ++shown[size_t(l)];
      out.thumbnails.emplace_back(i, sample_image(train, i));
    }
  }
  return out;
}

void ProjectContext::applyDataset(const DatasetSource& source, LoadedDataset loaded) {
  if (busy_) throw Error("a training run is using the dataset; stop it before loading another");
  TrainTest& tt = loaded.data;
  source_ = source;
  train_ = std::make_shared<Dataset>(std::move(tt.train));
  test_ = tt.test.size() > 0 ? std::make_shared<Dataset>(std::move(tt.test)) : nullptr;
  if (train_->class_names.empty() && test_ && !test_->class_names.empty())
    train_->class_names = test_->class_names;
  if (test_ && test_->class_names.empty()) test_->class_names = train_->class_names;
  description_ = loaded.description;
  warnings_ = loaded.warnings;
  images_ = std::move(loaded.images);
  thumbnails_ = std::move(loaded.thumbnails);
  // The project records what is loaded, so saving and reopening it (or
  // the CLI) reads the same data.
  const DatasetSpec before = project_.dataset;
  project_.dataset = loaded.spec;
  Q_EMIT datasetChanged();
  if (!sameSpec(before, loaded.spec)) Q_EMIT datasetSpecChanged(before);
}

void ProjectContext::setDatasetSpec(const DatasetSpec& spec) {
  project_.dataset = spec;
}

QStringList ProjectContext::classNames() const {
  QStringList v;
  if (weights_.valid() && !weights_.class_names.isEmpty()) return weights_.class_names;
  if (train_)
    for (auto& n : train_->class_names) v << QString::fromStdString(n);
  return v;
}

PreparedRun ProjectContext::prepareRun(const TrainConfig& c, const AppRunCheck& check) const {
  PrepareOptions o;
  o.purpose = check.purpose;
  o.config = c;
  o.device_requested = check.device_chosen;
  if (!check.checkpoint_folder.empty())
    o.outputs.push_back({"checkpoint folder", check.checkpoint_folder, true});
  if (!check.state_file.empty()) o.outputs.push_back({"sweep state", check.state_file, false});
  o.concurrent = check.concurrent;
  // The Dataset tab's data is what the run trains on; reading the project's
  // dataset again would double the memory and could read something else.
  o.given_data = true;
  o.train = train_.get();
  o.test = test_.get();
  return prepare_run(project_, o);
}

QStringList ProjectContext::trainingProblems(const TrainConfig& c, const AppRunCheck& check,
                                             QStringList* notes) const {
  QStringList p;
  for (const RunProblem& r : prepareRun(c, check).problems) {
    if (r.message.empty()) continue;
    // The CPU in place of a missing GPU trains the same network; the data
    // warnings (fewer classes than outputs) are probably a mistake.
    if (r.warning && r.kind == RunProblem::Kind::Device) {
      if (notes) *notes << appProblemText(r);
      continue;
    }
    p << appProblemText(r);
  }
  return p;
}

QStringList ProjectContext::trainingProblems(const TrainConfig& c) const {
  AppRunCheck check;
  check.checkpoint_folder = c.checkpoint_dir;
  return trainingProblems(c, check);
}

QStringList ProjectContext::trainingProblems() const {
  AppRunCheck check;
  check.device_chosen = false;
  return trainingProblems(project_.training, check);
}

void ProjectContext::setAugmentation(const AugmentConfig& a) {
  project_.training.augment = a;
}

void ProjectContext::setBusy(BusyOwner o, bool b) {
  const bool was = busy();
  busy_ = b ? busy_ | int(o) : busy_ & ~int(o);
  if (busy() != was) Q_EMIT busyChanged(busy());
}

void ProjectContext::setWeights(ModelWeights w) {
  weights_ = std::move(w);
  Q_EMIT weightsChanged();
  if (!chosen_) Q_EMIT weightsInUseChanged();
}

void ProjectContext::setChosenWeights(std::shared_ptr<const ModelWeights> w) {
  if (!w && !chosen_) return;
  chosen_ = std::move(w);
  Q_EMIT weightsInUseChanged();
}

void ProjectContext::addRunCheckpoints(const QVector<RunCheckpoint>& c) {
  if (c.isEmpty()) return;
  // A file offered again was rewritten (a sweep's best weights): one entry,
  // with its new label, listed as the newest.
  run_checkpoints_.removeIf([&](const RunCheckpoint& old) {
    return std::any_of(c.begin(), c.end(),
                       [&](const RunCheckpoint& n) { return n.path == old.path; });
  });
  run_checkpoints_ += c;
  Q_EMIT runCheckpointsChanged();
}

int64_t ProjectContext::residentBytes() const {
  int64_t bytes = 0;
  for (const auto& d : {train_, test_})
    if (d) bytes += advisor::cuda_resident_bytes(*d);
  return bytes;
}

}  // namespace dc::gui
