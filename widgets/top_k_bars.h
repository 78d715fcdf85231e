#pragma once
// Horizontal bars: the top-k predictions (class name, bar, percentage) or
// any list of values (a 1-D activation: unit name, bar, value).
#include <QString>
#include <QVector>
#include <QWidget>
#include <utility>

namespace dc::widgets {

class TopKBars : public QWidget {
  Q_OBJECT
 public:
  struct Entry {
    Entry() = default;
    Entry(QString n, double p, QString t = {}, bool neg = false)
        : name(std::move(n)), probability(p), text(std::move(t)), negative(neg) {}
    QString name;
    double probability = 0;  // [0, 1]: the bar's length
    QString text;            // shown after the bar instead of the percentage
    bool negative = false;   // drawn in another colour (a negative activation)
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
