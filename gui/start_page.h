#pragma once
// What an empty canvas shows: how to start (the palette), the bundled
// templates and the recent projects, each one click away. It floats over
// the canvas' centre and hides as soon as the network has a layer.
#include <QFrame>
#include <QStringList>

class QAbstractScrollArea;
class QListWidget;

namespace dc::gui {

class StartPage : public QFrame {
  Q_OBJECT
 public:
  // A child of the canvas, kept at the centre of its viewport. Not a child
  // of the viewport: scrolling the canvas would move it off-centre.
  explicit StartPage(QAbstractScrollArea* canvas);

  // Recent project files, newest first; missing ones are left out.
  void setRecent(const QStringList& files);
  QListWidget* templateList() const { return templates_; }
  QListWidget* recentList() const { return recent_; }

 signals:
  void templateChosen(const QString& file);
  void projectChosen(const QString& file);
  void openRequested();

 protected:
  bool eventFilter(QObject* o, QEvent* e) override;

 private:
  void center();

  QWidget* viewport_;
  QListWidget* templates_;
  QListWidget* recent_;
};

}  // namespace dc::gui
