#include "gui/theme.h"

#include <QApplication>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>
#include <QStyleHints>
#include <QtGlobal>

namespace dc::gui {

namespace {

constexpr const char* kSettingsKey = "view/theme";
Theme g_current = Theme::System;

// What the platform gave, taken before the first change.
struct Platform {
  QString style;
  QPalette palette;
};
const Platform& platform() {
  static const Platform p{QApplication::style()->name(), QApplication::palette()};
  return p;
}

bool desktopPrefersDark() {
#if QT_VERSION >= QT_VERSION_CHECK(6, 5, 0)
  if (QGuiApplication::styleHints()->colorScheme() == Qt::ColorScheme::Dark) return true;
#endif
  // Qt 6.4 (Debian 12) has no colour scheme: the platform palette, or the
  // GTK theme variant the desktop exports, says it.
  if (isDark(platform().palette)) return true;
  return qEnvironmentVariable("GTK_THEME").endsWith(":dark", Qt::CaseInsensitive);
}

void setStyle(const QString& name) {
  if (QApplication::style()->name().compare(name, Qt::CaseInsensitive) != 0)
    QApplication::setStyle(QStyleFactory::create(name));
}

}  // namespace

QString themeKey(Theme t) {
  switch (t) {
    case Theme::Light:
      return "light";
    case Theme::Dark:
      return "dark";
    case Theme::System:
      break;
  }
  return "system";
}

Theme themeFromKey(const QString& key) {
  if (key == "light") return Theme::Light;
  if (key == "dark") return Theme::Dark;
  return Theme::System;
}

Theme savedTheme() {
  return themeFromKey(QSettings().value(kSettingsKey).toString());
}

void saveTheme(Theme t) {
  QSettings().setValue(kSettingsKey, themeKey(t));
}

Theme currentTheme() {
  return g_current;
}

bool isDark(const QPalette& p) {
  return p.color(QPalette::Window).lightness() < 128;
}

QPalette darkPalette() {
  QPalette p;
  const QColor window(0x2d, 0x2f, 0x33), base(0x1f, 0x21, 0x24), text(0xe3, 0xe5, 0xe8);
  const QColor button(0x36, 0x39, 0x3e), dim(0x8b, 0x90, 0x97), accent(0x3d, 0x8b, 0xe0);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x27, 0x29, 0x2d));
  p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3d, 0x42));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, dim);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, button);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
  p.setColor(QPalette::Light, QColor(0x4a, 0x4d, 0x53));
  p.setColor(QPalette::Midlight, QColor(0x40, 0x43, 0x48));
  p.setColor(QPalette::Mid, QColor(0x2a, 0x2c, 0x30));
  p.setColor(QPalette::Dark, QColor(0x1a, 0x1b, 0x1e));
  p.setColor(QPalette::Shadow, QColor(0x10, 0x10, 0x12));
  p.setColor(QPalette::Highlight, accent);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(0x6c, 0xb0, 0xf5));
  p.setColor(QPalette::LinkVisited, QColor(0xa9, 0x8d, 0xf0));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, dim);
  p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x50, 0x53, 0x58));
  return p;
}

void applyTheme(Theme t) {
  const Platform& sys = platform();
  g_current = t;
  const bool dark = t == Theme::Dark || (t == Theme::System && desktopPrefersDark());
  if (t == Theme::System && dark == isDark(sys.palette)) {
    setStyle(sys.style);
    QApplication::setPalette(sys.palette);
    return;
  }
  setStyle("Fusion");
  QApplication::setPalette(dark ? darkPalette() : QApplication::style()->standardPalette());
}

}  // namespace dc::gui
