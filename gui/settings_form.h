#pragma once
// A form of training settings generated from the engine's settings table
// (settings.h): one control per row, its label, range and choices from the
// row, its help and range as the tooltip. Numbers are typed as text, so
// 1e-8 and 3e-4 read as written; a value the row refuses is outlined in red
// with the reason and is not applied. Qt-side counterpart of the CLI's flags.
#include <deepcanvas/settings.h>

#include <QMap>
#include <QString>
#include <QStringList>
#include <QWidget>

class QFormLayout;

namespace dc::gui {

class SettingsForm : public QWidget {
  Q_OBJECT
 public:
  // The rows of `group` ("Run", "Optimizer", ...) except those in `skip`
  // (settings another panel owns, or that get a custom control).
  SettingsForm(const QString& group, const QStringList& skip, QWidget* parent = nullptr);

  // Shows c's values (no changed() signal).
  void setConfig(const TrainConfig& c);
  // Writes the accepted values into c; rows with a refused value keep c's.
  void applyTo(TrainConfig& c) const;
  // Sets one row's value as if the user had (changed() follows).
  void setValue(const QString& key, const AttrValue& v);
  // "label (training.key) problem" for each refused value.
  QStringList problems() const;
  QWidget* control(const QString& key) const { return controls_.value(key); }
  QStringList keys() const { return controls_.keys(); }
  // For rows that are not in the table (a folder, a step limit).
  QFormLayout* layout() const { return form_; }
  // Whether key's row is shown: rows that have no effect under the form's
  // other choices (momentum for Adam, gamma without the step schedule) are
  // hidden and keep their values.
  bool rowShown(const QString& key) const;

 signals:
  void changed();

 private:
  void showValue(const SettingSpec& s, const AttrValue& v);
  // The control's value, or the reason it is refused.
  bool read(const SettingSpec& s, AttrValue& v, std::string& problem) const;
  void edited(const SettingSpec& s);
  void showApplicableRows();

  QFormLayout* form_;
  QMap<QString, QWidget*> controls_;
  std::vector<const SettingSpec*> rows_;
  // The settings last shown: the base for rows of other groups when
  // deciding which rows apply.
  TrainConfig shown_;
};

}  // namespace dc::gui
