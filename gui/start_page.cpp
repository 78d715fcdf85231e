#include "gui/start_page.h"

#include "gui/template_dialog.h"

#include <QAbstractScrollArea>
#include <QDir>
#include <QEvent>
#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <algorithm>

namespace dc::gui {

namespace {
constexpr int kFileRole = Qt::UserRole + 1;

QListWidget* makeList(QWidget* parent, const QString& name) {
  auto* l = new QListWidget(parent);
  l->setObjectName(name);
  l->setFrameShape(QFrame::NoFrame);
  l->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  l->setMinimumWidth(250);
  l->setCursor(Qt::PointingHandCursor);
  return l;
}

QLabel* heading(const QString& text, QWidget* parent) {
  auto* h = new QLabel(text, parent);
  QFont f = h->font();
  f.setBold(true);
  h->setFont(f);
  return h;
}
}  // namespace

StartPage::StartPage(QAbstractScrollArea* canvas) : QFrame(canvas), viewport_(canvas->viewport()) {
  setObjectName("startPage");
  setFrameShape(QFrame::StyledPanel);
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::Base);

  auto* title = new QLabel(tr("Start a network"), this);
  QFont tf = title->font();
  tf.setPointSizeF(tf.pointSizeF() * 1.4);
  tf.setBold(true);
  title->setFont(tf);
  auto* hint =
      new QLabel(tr("Drag a layer from the Layers palette onto the canvas, or double-click it. "
                    "Or start from a template, or open a project."),
                 this);
  hint->setWordWrap(true);
  hint->setForegroundRole(QPalette::PlaceholderText);

  templates_ = makeList(this, "startTemplates");
  for (const auto& [name, file] : TemplateDialog::templates()) {
    auto* it = new QListWidgetItem(name, templates_);
    it->setData(kFileRole, file);
    it->setToolTip(tr("%1: a new project from %2").arg(name, QFileInfo(file).fileName()));
  }
  // The transfer-learning templates too, as File → New from Template lists
  // them (a base not fetched yet is explained when it is chosen).
  for (const auto& [name, id] : TemplateDialog::transferTemplates()) {
    auto* it = new QListWidgetItem(name, templates_);
    it->setData(kFileRole, id);
    it->setToolTip(tr("%1: a pretrained base, frozen, with a new head to train on your images "
                      "(installer/fetch-pretrained.sh fetches the base once)")
                       .arg(name));
  }
  recent_ = makeList(this, "startRecent");
  auto* open = new QPushButton(tr("Open…"), this);
  open->setObjectName("startOpen");

  auto* lay = new QGridLayout(this);
  lay->setContentsMargins(20, 16, 20, 16);
  lay->setHorizontalSpacing(24);
  lay->addWidget(title, 0, 0, 1, 2);
  lay->addWidget(hint, 1, 0, 1, 2);
  lay->addWidget(heading(tr("Templates"), this), 2, 0);
  lay->addWidget(heading(tr("Recent projects"), this), 2, 1);
  lay->addWidget(templates_, 3, 0);
  lay->addWidget(recent_, 3, 1);
  lay->addWidget(open, 4, 1, Qt::AlignRight);

  auto choose = [this](QListWidget* list, auto signal) {
    connect(list, &QListWidget::itemActivated, this, [this, signal](QListWidgetItem* it) {
      const QString f = it->data(kFileRole).toString();
      if (!f.isEmpty()) Q_EMIT(this->*signal)(f);
    });
    // One click, as on a web page: the lists are menus, not selections.
    connect(list, &QListWidget::itemClicked, list, &QListWidget::itemActivated);
  };
  choose(templates_, &StartPage::templateChosen);
  choose(recent_, &StartPage::projectChosen);
  connect(open, &QPushButton::clicked, this, &StartPage::openRequested);
  setRecent({});
  viewport_->installEventFilter(this);
  center();
}

void StartPage::setRecent(const QStringList& files) {
  recent_->clear();
  for (const QString& f : files) {
    if (!QFileInfo::exists(f)) continue;
    auto* it = new QListWidgetItem(QFileInfo(f).fileName(), recent_);
    it->setData(kFileRole, f);
    it->setToolTip(QDir::toNativeSeparators(f));
  }
  if (recent_->count() == 0) {
    auto* it = new QListWidgetItem(tr("No recent projects yet"), recent_);
    it->setFlags(Qt::NoItemFlags);
  }
}

bool StartPage::eventFilter(QObject* o, QEvent* e) {
  if (o == viewport_ && e->type() == QEvent::Resize) center();
  return QFrame::eventFilter(o, e);
}

void StartPage::center() {
  // As tall as the lists need, within the canvas (a small window scrolls the lists).
  const int rows = std::max(templates_->count(), recent_->count());
  const int list_h = rows * templates_->sizeHintForRow(0) + 2 * templates_->frameWidth() + 4;
  templates_->setFixedHeight(std::clamp(list_h, 60, 260));
  recent_->setFixedHeight(templates_->height());
  // Template names in full where the canvas has room ("GRU row classifier
  // (Fashion-MNIST rows)" was cut short at the lists' minimum width).
  const int names = templates_->sizeHintForColumn(0) + 2 * templates_->frameWidth() + 8;
  // The recent list keeps 180 pixels; the templates may take the rest of the
  // canvas' width (half of it left their names cut with the page's room to
  // spare, issue 36).
  recent_->setMinimumWidth(180);
  const int room = viewport_->width() - 24 - 40 - 24 - recent_->minimumWidth();
  templates_->setMinimumWidth(std::clamp(names, 250, std::max(250, room)));
  const QRect area = viewport_->geometry();
  resize(sizeHint().boundedTo(area.size() - QSize(24, 24)));
  move(area.center() - rect().center());
  raise();
}

}  // namespace dc::gui
