#pragma once
// Horizontal bars for the top-k predictions: class name, bar, percentage.
#include <QString>
#include <QVector>
#include <QWidget>

namespace dc::widgets {

class TopKBars : public QWidget {
  Q_OBJECT
 public:
  struct Entry {
    QString name;
    double probability = 0;  // [0, 1]
  };
  explicit TopKBars(QWidget* parent = nullptr);
  void setEntries(const QVector<Entry>& entries);  // highest first
  const QVector<Entry>& entries() const { return entries_; }
  void clear();
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  QVector<Entry> entries_;
};

}  // namespace dc::widgets
