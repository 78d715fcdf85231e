// What the Dataset tab shows of the loaded dataset: its description and
// class counts, the preview grid, and the messages and warnings.
#include <deepcanvas/errors.h>

#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableWidget>
#include <algorithm>
#include <vector>

#include <deepcanvas/image_data.h>
#include "gui/dataset_panel.h"
#include "widgets/image_grid.h"
#include "widgets/series_plot.h"

namespace dc::gui {

namespace {

// The engine's own batch augmentation, as a training batch gets it: pixels
// as [0, 1] floats, black padding, brightness capped at white.
void augment_sample(const AugmentConfig& a, const Shape& s, uint64_t seed,
                    std::vector<uint8_t>& px) {
  std::vector<float> x(px.size());
  for (size_t i = 0; i < px.size(); ++i) x[i] = float(px[i]) / 255.f;
  augment_batch(a, s, 0.f, seed, x.data(), 1, 1.f);
  for (size_t i = 0; i < px.size(); ++i)
    px[i] = uint8_t(std::clamp(x[i] * 255.f + 0.5f, 0.f, 255.f));
}

QImage chw_image(const std::vector<uint8_t>& px, const Shape& s) {
  Dataset one;
  one.sample_shape = s;
  one.pixels = px;
  one.labels = {0};
  return sample_image(one, 0);
}

// A decoded picture (rows of grey or RGB pixels) as it is stored.
QImage picture_image(const Picture& p) {
  if (p.h <= 0 || p.w <= 0 || (p.c != 1 && p.c != 3)) return {};
  QImage img(p.w, p.h, p.c == 1 ? QImage::Format_Grayscale8 : QImage::Format_RGB888);
  for (int y = 0; y < p.h; ++y)
    std::copy_n(p.px.data() + size_t(y) * size_t(p.w) * size_t(p.c), size_t(p.w) * size_t(p.c),
                img.scanLine(y));
  return img;
}

}  // namespace

void DatasetPanel::showDataset() {
  auto train = ctx_->trainSet();
  auto test = ctx_->testSet();
  table_->setRowCount(0);
  thumbs_->clear();
  text_samples_->clear();
  suggest_->setVisible(false);
  // A series: steps of numbers, neither pictures nor text.
  const bool series = train && is_series(*train) && train->size() > 0;
  thumbs_->setVisible(!train || (!train->tokens && !series));
  text_samples_->setVisible(train && train->tokens);
  series_plot_->setVisible(series);
  // Augmentation draws on pictures; the preflight refuses it for other inputs.
  const bool images = !train || train->sample_shape.rank() == 3;
  aug_box_->setVisible(images);
  preview_box_->setVisible(images);
  if (!train) {
    summary_->setText(tr("No dataset loaded."));
    preview_->clear();
    return;
  }
  QString summary = tr("<b>%1</b><br>%2 training and %3 test samples of shape %4")
                        .arg(ctx_->datasetDescription().toHtmlEscaped())
                        .arg(train->size())
                        .arg(test ? test->size() : 0)
                        .arg(QString::fromStdString(train->sample_shape.str()));
  const ImageDataReport& report = ctx_->imageReport();
  if (train->images) {
    const std::string note =
        report.mode_note.empty() ? train->images->mode_note() : report.mode_note;
    if (!note.empty())
      summary += "<br>" + tr("Pictures: %1").arg(QString::fromStdString(note).toHtmlEscaped());
    const Shape& s = report.suggested_input;
    suggest_->setVisible(s.rank() == 3 && !(s == train->sample_shape));
    suggest_->setText(tr("Use a %1 Input").arg(QString::fromStdString(s.str())));
    if (!report.picture_note.empty())
      summary +=
          "<br>" + tr("Files: %1").arg(QString::fromStdString(report.picture_note).toHtmlEscaped());
  }
  summary_->setText(summary);
  QStringList names = ctx_->classNames();
  // Images: counts per split from the engine's listing (validation from a
  // val/ folder); other kinds: from the labels.
  std::vector<std::vector<int64_t>> counts;  // per column after the name
  QStringList heads;
  int n_classes = train->num_classes;
  if (train->images && !report.list.class_names.empty()) {
    const ImageList& l = report.list;
    n_classes = int(l.class_names.size());
    const std::pair<QString, const std::vector<ImageItem>*> splits[] = {
        {tr("Training"), &l.train}, {tr("Validation"), &l.val}, {tr("Test"), &l.test}};
    for (const auto& [head, items] : splits) {
      if (items == &l.val && items->empty()) continue;
      std::vector<int64_t> c(size_t(n_classes), 0);
      for (const ImageItem& it : *items)
        if (it.label >= 0 && it.label < n_classes) ++c[size_t(it.label)];
      heads << head;
      counts.push_back(std::move(c));
    }
  } else {
    for (int32_t l : train->labels) n_classes = std::max(n_classes, l + 1);
    std::vector<int64_t> tr_count(size_t(n_classes), 0), te_count(size_t(n_classes), 0);
    for (int32_t l : train->labels)
      if (l >= 0) ++tr_count[size_t(l)];
    if (test)
      for (int32_t l : test->labels)
        if (l >= 0 && l < n_classes) ++te_count[size_t(l)];
    heads << tr("Training") << tr("Test");
    counts = {std::move(tr_count), std::move(te_count)};
  }
  table_->setColumnCount(int(heads.size()) + 1);
  table_->setHorizontalHeaderLabels(QStringList{tr("Class")} + heads);
  // A text vocabulary has dozens of classes; the table still helps, the grid not.
  table_->setRowCount(n_classes);
  for (int c = 0; c < n_classes; ++c) {
    QString nm = c < names.size() && !names[c].isEmpty() ? names[c] : QString::number(c);
    // A text's vocabulary: token 0 is padding, and whitespace would show as
    // an empty cell.
    if (train->tokens && c == 0) nm = tr("(padding)");
    if (nm == "\n") nm = "\\n";
    if (nm == "\t") nm = "\\t";
    if (nm == " ") nm = tr("(space)");
    table_->setItem(c, 0, new QTableWidgetItem(nm));
    for (size_t k = 0; k < counts.size(); ++k)
      table_->setItem(c, int(k) + 1, new QTableWidgetItem(QString::number(counts[k][size_t(c)])));
  }
  // Thumbnails: made while loading (image files decode then).
  for (const auto& [i, img] : ctx_->thumbnails()) {
    const int l = train->labels[size_t(i)];
    QString nm = l < names.size() ? names[l] : QString::number(l);
    thumbs_->addImage(img, nm, tr("#%1: %2").arg(i).arg(nm), QVariant::fromValue(int(i)));
  }
  if (train->tokens) showTextSamples(*train, names);
  if (series) showSeries(*train);
  preview_index_ = 0;
  refreshPreview();
  showMessages();
}

bool DatasetPanel::showsAugmentation() const {
  return !aug_box_->isHidden();
}

void DatasetPanel::showTextSamples(const Dataset& train, const QStringList& names) {
  // Ten windows spread over the training text, each with the character the
  // model learns to predict after it; line breaks shown as ⏎, padding as ·,
  // a space to predict as ␣.
  const int64_t n = train.size(), T = train.sample_shape.numel();
  const auto shown = [&](int64_t id) {
    if (id <= 0 || id >= names.size()) return QStringLiteral("·");
    const QString& c = names[int(id)];
    return c == "\n" ? QStringLiteral("⏎") : c == "\t" ? QStringLiteral("⇥") : c;
  };
  QStringList lines;
  std::vector<float> ids(size_t(std::max<int64_t>(T, 0)));
  for (int k = 0; k < 10 && n > 0; ++k) {
    const int64_t i = n * k / 10;
    try {
      train.copy_values(i, 1, ids.data());
    } catch (const std::exception&) {
      break;  // not a dataset of windows
    }
    QString window;
    for (int64_t t = 0; t < T; ++t) window += shown(int64_t(ids[size_t(t)]));
    const QString next = shown(train.labels[size_t(i)]);
    lines << tr("%1  →  %2").arg(window, next == " " ? QStringLiteral("␣") : next);
  }
  text_samples_->setPlainText(lines.join('\n'));
}

void DatasetPanel::showSeries(const Dataset& train) {
  // The start of the training series as the file holds it (before
  // normalisation): window 0's rows, then the last row of each later window
  // (a window is the rows before its label's), and the class each window is
  // labelled with at the row it labels. 400 rows stay legible.
  constexpr int64_t kRows = 400;
  const int64_t T = train.sample_shape[0], F = train.sample_shape[1];
  std::vector<float> values, w(static_cast<size_t>(T * F));
  QVector<double> label_at, label;
  try {
    for (int64_t i = 0; i < train.size() && int64_t(values.size()) < kRows * F; ++i) {
      train.copy_values(i, 1, w.data());
      const int64_t from = i == 0 ? 0 : T - 1;
      const int64_t take = std::min(T - from, kRows - int64_t(values.size()) / F);
      values.insert(values.end(), w.begin() + from * F, w.begin() + (from + take) * F);
      if (T - 1 + i < kRows) {
        label_at << double(T - 1 + i);
        label << double(train.labels[size_t(i)]);
      }
    }
  } catch (const std::exception&) {
    series_plot_->setVisible(false);  // not a dataset of stored values
    return;
  }
  series_plot_->setRows(values, F, train.feature_names, label_at, label,
                        std::max(1, train.num_classes));
}

void DatasetPanel::addImagePreview(const Dataset& train, const AugmentConfig& a) {
  // From the original picture, as training reads it: the whole picture,
  // the evaluation's resize and centre crop, then training draws (random
  // resized crop and colour jitter on the picture, then the batch
  // augmentation), each the engine's own code.
  const ImageSamples& images = *train.images;
  Picture pic, original;
  try {
    // Training crops from the stored picture (shrunk to what the Input
    // needs); the user recognises the file as it is.
    pic = images.picture(preview_index_);
    original = decode_image(images.item(preview_index_).path, pic.c);
  } catch (const std::exception& e) {
    preview_->addImage({}, tr("unreadable"), QString::fromUtf8(e.what()));
    return;
  }
  preview_->addImage(picture_image(original), tr("whole picture"),
                     tr("%1: %2×%3 pixels (kept at %4×%5 for training)")
                         .arg(QString::fromStdString(images.item(preview_index_).path))
                         .arg(original.w)
                         .arg(original.h)
                         .arg(pic.w)
                         .arg(pic.h));
  ImageTransform t = images.transform();
  t.random_resized_crop = a.resized_crop;  // as the panel shows them, before a reload
  t.color_jitter = a.color_jitter;
  std::vector<uint8_t> chw(size_t(t.input.numel()));
  picture_to_chw(pic, t, 0, preview_index_, chw.data());
  preview_->addImage(chw_image(chw, t.input), tr("evaluation"),
                     tr("Resized to cover %1 of the Input, centre-cropped").arg(t.crop_fraction));
  if (!a.resized_crop && a.color_jitter <= 0 && !a.enabled()) return;
  for (int k = 0; k < 6; ++k) {
    const uint64_t seed = preview_seed_ * 7919 + uint64_t(k) + 1;  // 0 would be evaluation
    picture_to_chw(pic, t, seed, preview_index_, chw.data());
    std::vector<uint8_t> out = chw;
    if (a.enabled() && t.input.rank() == 3) augment_sample(a, t.input, seed, out);
    preview_->addImage(chw_image(out, t.input), tr("training"));
  }
}

QString DatasetPanel::summaryText() const {
  return summary_->text();
}

void DatasetPanel::refreshPreview() {
  preview_->clear();
  auto train = ctx_->trainSet();
  if (!train || (train->pixels.empty() && !train->images) || preview_index_ >= train->size())
    return;
  const AugmentConfig a = augmentOptions();
  if (train->images) {
    addImagePreview(*train, a);
    return;
  }
  const Shape& s = train->sample_shape;
  const int64_t per = s.numel();
  preview_->addImage(sample_image(*train, preview_index_), tr("original"));
  if (!a.enabled() || s.rank() != 3) return;
  const std::vector<uint8_t> src(train->pixels.begin() + preview_index_ * per,
                                 train->pixels.begin() + (preview_index_ + 1) * per);
  for (int k = 0; k < 7; ++k) {
    std::vector<uint8_t> out = src;
    augment_sample(a, s, preview_seed_ * 7919 + uint64_t(k), out);
    preview_->addImage(chw_image(out, s), tr("augmented"));
  }
}

void DatasetPanel::showMessages(const QString& error) {
  QStringList lines;
  QString style;
  if (!error.isEmpty()) {
    lines << error;
    style = "background:#fdecea; color:#611a15; border:1px solid #f5c2c0;";
  } else {
    lines << ctx_->datasetWarnings();
    if (ctx_->hasDataset()) {
      QStringList problems = ctx_->trainingProblems();
      for (const QString& p : problems) lines << tr("Before training: %1").arg(p);
      style = problems.isEmpty() ? "background:#fff8e1; color:#5d4200; border:1px solid #ffe08a;"
                                 : "background:#fdecea; color:#611a15; border:1px solid "
                                   "#f5c2c0;";
    }
  }
  if (lines.isEmpty()) {
    message_->clear();
    message_->setVisible(false);
    return;
  }
  QString html;
  for (const QString& l : lines) html += "<p style='margin:2px'>" + l.toHtmlEscaped() + "</p>";
  message_->setText(html);
  message_->setStyleSheet("QLabel {" + style + " border-radius:4px; padding:6px; }");
  message_->setVisible(true);
}

QString DatasetPanel::messageText() const {
  return message_->isHidden() ? QString() : message_->text();
}

}  // namespace dc::gui
