#pragma once
#include "gui/main_window.h"
#include "widgets/property_editor.h"

namespace dc::test {

template <typename T>
T* propertyWidget(gui::MainWindow& w, const QString& name) {
  return w.properties()->findChild<T*>(name);
}

}  // namespace dc::test
