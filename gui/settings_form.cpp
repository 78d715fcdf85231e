#include "gui/settings_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QSpinBox>
#include <limits>

namespace dc::gui {

namespace {

QString capitalised(const std::string& s) {
  QString q = QString::fromStdString(s);
  if (!q.isEmpty()) q[0] = q[0].toUpper();
  return q;
}

// Integers that fit a spin box get one; wider ones (the seed) are typed.
bool spin_fits(const AttrSpec& a) {
  return a.min >= double(std::numeric_limits<int>::min()) &&
         a.max <= double(std::numeric_limits<int>::max());
}

QString number_text(double v) {
  return QString::number(v, 'g', 10);
}

const QString kBad = QStringLiteral("QLineEdit { border: 1px solid #d32f2f; }");

}  // namespace

SettingsForm::SettingsForm(const QString& group, const QStringList& skip, QWidget* parent)
    : QWidget(parent), form_(new QFormLayout(this)) {
  form_->setContentsMargins(6, 4, 6, 4);
  form_->setVerticalSpacing(3);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  for (const SettingSpec& s : training_settings()) {
    const QString key = QString::fromStdString(s.attr.name);
    if (QString::fromStdString(s.group) != group || skip.contains(key)) continue;
    const AttrSpec& a = s.attr;
    QWidget* w = nullptr;
    if (a.type == AttrType::Bool) {
      auto* b = new QCheckBox(this);
      connect(b, &QCheckBox::toggled, this, [this, &s] { edited(s); });
      w = b;
    } else if (a.type == AttrType::Enum) {
      auto* c = new QComboBox(this);
      for (const auto& n : a.choices) c->addItem(QString::fromStdString(n));
      // A long choice must not widen the settings column.
      c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
      c->setMinimumContentsLength(8);
      connect(c, &QComboBox::currentIndexChanged, this, [this, &s] { edited(s); });
      w = c;
    } else if (a.type == AttrType::Int && spin_fits(a)) {
      auto* b = new QSpinBox(this);
      b->setRange(int(a.min) + (s.min_open ? 1 : 0), int(a.max) - (s.max_open ? 1 : 0));
      // A 0 that means something else reads as words, as the help says it.
      if (key == "early_stopping_patience") b->setSpecialValueText(tr("off"));
      if (key == "threads") b->setSpecialValueText(tr("every core"));
      connect(b, &QSpinBox::valueChanged, this, [this, &s] { edited(s); });
      w = b;
    } else {  // a wide integer, a real number or text: typed, checked by the row
      auto* e = new QLineEdit(this);
      connect(e, &QLineEdit::textEdited, this, [this, &s] { edited(s); });
      w = e;
    }
    w->setObjectName(key);
    w->setToolTip(QString::fromStdString(a.help + " (" + setting_range_text(s) + ")"));
    form_->addRow(capitalised(s.label), w);
    controls_.insert(key, w);
    rows_.push_back(&s);
  }
  showApplicableRows();
}

void SettingsForm::showValue(const SettingSpec& s, const AttrValue& v) {
  QWidget* w = controls_.value(QString::fromStdString(s.attr.name));
  const QSignalBlocker block(w);
  if (auto* b = qobject_cast<QCheckBox*>(w)) {
    b->setChecked(std::get<bool>(v));
  } else if (auto* c = qobject_cast<QComboBox*>(w)) {
    c->setCurrentText(QString::fromStdString(std::get<std::string>(v)));
  } else if (auto* sp = qobject_cast<QSpinBox*>(w)) {
    sp->setValue(int(std::get<int64_t>(v)));
  } else if (auto* e = qobject_cast<QLineEdit*>(w)) {
    if (const auto* d = std::get_if<double>(&v))
      e->setText(number_text(*d));
    else if (const auto* i = std::get_if<int64_t>(&v))
      e->setText(QString::number(*i));
    else
      e->setText(QString::fromStdString(std::get<std::string>(v)));
    e->setStyleSheet({});
    e->setToolTip(QString::fromStdString(s.attr.help + " (" + setting_range_text(s) + ")"));
  }
}

void SettingsForm::setConfig(const TrainConfig& c) {
  shown_ = c;
  for (const SettingSpec* s : rows_) showValue(*s, s->get(c));
  showApplicableRows();
}

void SettingsForm::showApplicableRows() {
  TrainConfig c = shown_;
  applyTo(c);
  for (const SettingSpec* s : rows_)
    form_->setRowVisible(controls_.value(QString::fromStdString(s->attr.name)),
                         !s->applies || s->applies(c));
}

bool SettingsForm::rowShown(const QString& key) const {
  QWidget* w = controls_.value(key);
  return w && !w->isHidden();
}

bool SettingsForm::read(const SettingSpec& s, AttrValue& v, std::string& problem) const {
  QWidget* w = controls_.value(QString::fromStdString(s.attr.name));
  if (auto* b = qobject_cast<QCheckBox*>(w)) {
    v = b->isChecked();
  } else if (auto* c = qobject_cast<QComboBox*>(w)) {
    v = c->currentText().toStdString();
  } else if (auto* sp = qobject_cast<QSpinBox*>(w)) {
    v = int64_t(sp->value());
  } else if (auto* e = qobject_cast<QLineEdit*>(w)) {
    const QString t = e->text().trimmed();
    bool ok = true;
    if (s.attr.type == AttrType::Int)
      v = int64_t(t.toLongLong(&ok));
    else if (s.attr.type == AttrType::Float)
      v = t.toDouble(&ok);
    else
      v = t.toStdString();
    if (!ok) {
      problem =
          "must be " + attr_type_with_article(s.attr.type) + ", got '" + t.toStdString() + "'";
      return false;
    }
  }
  problem = setting_problem(s, v);
  if (problem.empty() && s.check) problem = s.check(v);
  return problem.empty();
}

void SettingsForm::edited(const SettingSpec& s) {
  if (auto* e = qobject_cast<QLineEdit*>(controls_.value(QString::fromStdString(s.attr.name)))) {
    AttrValue v;
    std::string problem;
    const bool ok = read(s, v, problem);
    e->setStyleSheet(ok ? QString() : kBad);
    e->setToolTip(ok ? QString::fromStdString(s.attr.help + " (" + setting_range_text(s) + ")")
                     : capitalised(s.label + " " + problem));
  }
  showApplicableRows();
  Q_EMIT changed();
}

void SettingsForm::applyTo(TrainConfig& c) const {
  for (const SettingSpec* s : rows_) {
    AttrValue v;
    std::string problem;
    if (read(*s, v, problem)) s->set(c, v);
  }
}

void SettingsForm::setValue(const QString& key, const AttrValue& v) {
  for (const SettingSpec* s : rows_)
    if (QString::fromStdString(s->attr.name) == key) {
      showValue(*s, v);
      edited(*s);
    }
}

QStringList SettingsForm::problems() const {
  QStringList out;
  for (const SettingSpec* s : rows_) {
    AttrValue v;
    std::string problem;
    if (!read(*s, v, problem))
      out << QString::fromStdString(s->label + " (training." + s->attr.name + ") " + problem);
  }
  return out;
}

}  // namespace dc::gui
