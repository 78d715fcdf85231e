#include "gui/project_context.h"

#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/trainer.h>

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFileInfo>
#include <algorithm>
#include <set>

namespace dc::gui {

QImage sample_image(const Dataset& d, int64_t index) {
  const Shape& s = d.sample_shape;
  if ((d.pixels.empty() && !d.images) || index < 0 || index >= d.size()) return {};
  int c = 1, h = 0, w = 0;
  if (s.rank() == 3 && (s[0] == 1 || s[0] == 3)) {
    c = int(s[0]);
    h = int(s[1]);
    w = int(s[2]);
  } else if (s.rank() == 2) {
    h = int(s[0]);
    w = int(s[1]);
  } else {
    return {};
  }
  std::vector<uint8_t> decoded;
  if (d.images) {
    decoded.resize(size_t(s.numel()));
    d.images->sample(index, 0, decoded.data());
  }
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
  if (s.rank() != 3 || (s[0] != 1 && s[0] != 3)) return {};
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
  train_.reset();
  test_.reset();
  description_.clear();
  warnings_.clear();
  weights_ = {};
  run_checkpoints_.clear();
  Q_EMIT projectReplaced();
  setProject(std::move(p));
  Q_EMIT datasetChanged();
  Q_EMIT weightsChanged();
  Q_EMIT runCheckpointsChanged();
}

void ProjectContext::loadDataset(const DatasetSource& source) {
  if (busy_) throw Error("a training run is using the dataset; stop it before loading another");
  applyDataset(source, readDataset(project_, source));
}

LoadedDataset ProjectContext::readDataset(const Project& project, const DatasetSource& source) {
  TrainTest tt;
  QStringList warnings;
  QString desc;
  std::string dir;
  auto idx = [&](const std::string& d) {
    return d.find("fashion") != std::string::npos ? load_fashion_mnist(d) : load_idx_folder(d);
  };
  switch (source.kind) {
    case DatasetSource::Kind::Project: {
      ProjectData d = load_project_dataset(project);
      tt = std::move(d.data);
      dir = d.dir;
      desc = tr("project dataset: %1").arg(QString::fromStdString(dir));
      if (!d.note.empty()) warnings << QString::fromStdString(d.note);
      break;
    }
    case DatasetSource::Kind::Sample: {
      Project tmp = project;
      tmp.dataset.path = "sample:fashion-mnist-subset";
      dir = resolve_dataset_dir(tmp);
      tt = load_fashion_mnist(dir);
      desc = tr("bundled sample: Fashion-MNIST subset");
      break;
    }
    case DatasetSource::Kind::Idx:
      dir = source.path.toStdString();
      if (!QFileInfo(source.path).isDir()) throw IoError("'" + dir + "' is not a folder");
      tt = idx(dir);
      desc = tr("IDX folder: %1").arg(source.path);
      break;
    case DatasetSource::Kind::Csv:
      dir = source.path.toStdString();
      tt = load_csv_sequences(dir,
                              {source.window, source.target.toStdString(), source.test_fraction});
      desc = tr("CSV series: %1").arg(source.path);
      break;
    case DatasetSource::Kind::Text:
      dir = source.path.toStdString();
      tt = load_text_dataset(dir, {source.window, 1, source.test_fraction});
      desc = tr("text corpus: %1").arg(source.path);
      break;
    case DatasetSource::Kind::ImageFolder: {
      dir = source.path.toStdString();
      DatasetSpec spec = project.dataset;
      spec.kind = "image_folder";
      spec.test_fraction = source.test_fraction;
      ImageDataReport rep;
      tt = load_image_spec(project, spec, dir, &rep);
      const auto& skipped = rep.list.skipped;
      if (!skipped.empty()) {
        QStringList names;
        for (size_t i = 0; i < skipped.size() && i < 5; ++i)
          names << QString::fromStdString(skipped[i].path + " (" + skipped[i].why + ")");
        warnings << tr("%1 file(s) were skipped: %2%3")
                        .arg(skipped.size())
                        .arg(names.join(", "))
                        .arg(skipped.size() > 5 ? tr(", …") : QString());
      }
      desc = tr("image folder: %1").arg(source.path);
      break;
    }
  }
  // The project's image preprocessing (a transfer model's resize, grey ->
  // RGB and its base's normalisation) applies to whatever images feed it;
  // the project's own dataset got it when loaded.
  const ImagePreprocess& pre = project.dataset.preprocess;
  if (pre.active() && source.kind != DatasetSource::Kind::Project &&
      source.kind != DatasetSource::Kind::ImageFolder && !tt.train.pixels.empty() &&
      tt.train.sample_shape.rank() == 3) {
    preprocess_images(tt.train, pre);
    if (tt.test.size() > 0) preprocess_images(tt.test, pre);
    desc += tr(" (resized to %1, %2 channels)")
                .arg(tt.train.sample_shape[1])
                .arg(tt.train.sample_shape[0]);
  }
  return {std::move(tt), desc, warnings};
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
  Q_EMIT datasetChanged();
}

QStringList ProjectContext::classNames() const {
  QStringList v;
  if (weights_.valid() && !weights_.class_names.isEmpty()) return weights_.class_names;
  if (train_)
    for (auto& n : train_->class_names) v << QString::fromStdString(n);
  return v;
}

QStringList ProjectContext::trainingProblems(const TrainConfig& c) const {
  // The engine's own list (the Trainer refuses the first one), as sentences.
  QStringList p;
  for (const RunProblem& r : run_problems(project_.graph, c, train_.get(), test_.get())) {
    QString m = QString::fromStdString(r.message);
    if (!m.isEmpty()) m[0] = m[0].toUpper();
    p << m + ".";
  }
  return p;
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
}

void ProjectContext::addRunCheckpoints(const QVector<RunCheckpoint>& c) {
  if (c.isEmpty()) return;
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
