#pragma once
// The colour theme: the desktop's (System), or Light or Dark whatever the
// desktop uses. View → Theme picks it; it is remembered in QSettings.
#include <QPalette>
#include <QString>

namespace dc::gui {

enum class Theme { System, Light, Dark };

// "system", "light", "dark": the names stored in the settings.
QString themeKey(Theme t);
Theme themeFromKey(const QString& key);
Theme savedTheme();
void saveTheme(Theme t);

// Applies it to the whole application. Light and Dark use the Fusion style
// (the one style that follows any palette); System restores the style and
// palette the platform gave, and is dark where the desktop says it is (Qt
// 6.5's colour scheme, or GTK_THEME=...:dark with older Qt).
void applyTheme(Theme t);
Theme currentTheme();
bool isDark(const QPalette& p);
QPalette darkPalette();

}  // namespace dc::gui
