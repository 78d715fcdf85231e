// What the Dataset tab shows of the loaded dataset: its description and
// class counts, the preview grid, and the messages and warnings.
#include <deepcanvas/errors.h>

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <algorithm>
#include <vector>

#include "gui/dataset_panel.h"
#include <deepcanvas/image_data.h>
#include "widgets/image_grid.h"

namespace dc::gui {

void DatasetPanel::showDataset() {
  auto train = ctx_->trainSet();
  auto test = ctx_->testSet();
  table_->setRowCount(0);
  thumbs_->clear();
  if (!train) {
    summary_->setText(tr("No dataset loaded."));
    return;
  }
  summary_->setText(tr("<b>%1</b><br>%2 training and %3 test samples of shape %4")
                        .arg(ctx_->datasetDescription().toHtmlEscaped())
                        .arg(train->size())
                        .arg(test ? test->size() : 0)
                        .arg(QString::fromStdString(train->sample_shape.str())));
  int n_classes = train->num_classes;
  for (int32_t l : train->labels) n_classes = std::max(n_classes, l + 1);
  std::vector<int64_t> tr_count(size_t(n_classes), 0), te_count(size_t(n_classes), 0);
  for (int32_t l : train->labels) ++tr_count[size_t(l)];
  if (test)
    for (int32_t l : test->labels)
      if (l >= 0 && l < n_classes) ++te_count[size_t(l)];
  QStringList names = ctx_->classNames();
  // A text vocabulary has dozens of classes; the table still helps, the grid not.
  table_->setRowCount(n_classes);
  for (int c = 0; c < n_classes; ++c) {
    QString nm = c < names.size() && !names[c].isEmpty() ? names[c] : QString::number(c);
    if (nm == "\n") nm = "\\n";
    table_->setItem(c, 0, new QTableWidgetItem(nm));
    table_->setItem(c, 1, new QTableWidgetItem(QString::number(tr_count[size_t(c)])));
    table_->setItem(c, 2, new QTableWidgetItem(QString::number(te_count[size_t(c)])));
  }
  // Thumbnails: the first few of every class, so each label is seen.
  if (!train->pixels.empty()) {
    constexpr int kPerClass = 6;
    std::vector<int> shown(size_t(n_classes), 0);
    for (int64_t i = 0; i < train->size(); ++i) {
      int l = train->labels[size_t(i)];
      if (shown[size_t(l)] >= kPerClass) continue;
      ++shown[size_t(l)];
      QString nm = l < names.size() ? names[l] : QString::number(l);
      thumbs_->addImage(sample_image(*train, i), nm, tr("#%1: %2").arg(i).arg(nm),
                        QVariant::fromValue(int(i)));
      if (thumbs_->count() >= 120) break;
    }
  }
  preview_index_ = 0;
  refreshPreview();
  showMessages();
}

void DatasetPanel::refreshPreview() {
  preview_->clear();
  auto train = ctx_->trainSet();
  if (!train || train->pixels.empty() || preview_index_ >= train->size()) return;
  const Shape& s = train->sample_shape;
  const int64_t per = s.numel();
  preview_->addImage(sample_image(*train, preview_index_), tr("original"));
  const AugmentConfig a = augmentOptions();
  if (!a.enabled() || s.rank() != 3) return;
  // The engine's own augmentation, as training batches get it: pixels as
  // [0, 1] floats, black padding, brightness capped at white.
  std::vector<float> x(static_cast<size_t>(per));
  for (int k = 0; k < 7; ++k) {
    const uint8_t* src = train->pixels.data() + preview_index_ * per;
    for (int64_t i = 0; i < per; ++i) x[size_t(i)] = float(src[i]) / 255.f;
    augment_batch(a, s, 0.f, preview_seed_ * 7919 + uint64_t(k), x.data(), 1, 1.f);
    Dataset one;
    one.sample_shape = s;
    one.pixels.resize(size_t(per));
    one.labels = {0};
    for (int64_t i = 0; i < per; ++i)
      one.pixels[size_t(i)] = uint8_t(std::clamp(x[size_t(i)] * 255.f + 0.5f, 0.f, 255.f));
    preview_->addImage(sample_image(one, 0), tr("augmented"));
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
