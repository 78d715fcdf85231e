# The training dashboard and the inference panel: widgets (plots, confusion
# matrix, top-k bars, image grid, saliency view) and the gui panels with the
# TrainingSession. Kept as two static libraries of their own so the editor's
# targets and these can be built and tested independently; the app links
# deepcanvas-dashboard. Included from gui/CMakeLists.txt (and, until the app
# exists, from tests/CMakeLists.txt); include_guard makes the second a no-op.
include_guard(GLOBAL)

find_package(Qt6 REQUIRED COMPONENTS Core Gui Widgets PrintSupport Test)
find_package(QCustomPlotQt6 REQUIRED)
if(NOT DC_HAVE_OPENCV)
  message(STATUS "DeepCanvas dashboard: no OpenCV, image folders and image files are unavailable")
endif()

set(DC_DASH_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)

add_library(deepcanvas-dashboard-widgets STATIC
  ${DC_DASH_ROOT}/widgets/live_plot.cpp
  ${DC_DASH_ROOT}/widgets/confusion_matrix_widget.cpp
  ${DC_DASH_ROOT}/widgets/top_k_bars.cpp
  ${DC_DASH_ROOT}/widgets/image_grid.cpp
  ${DC_DASH_ROOT}/widgets/saliency_view.cpp
  ${DC_DASH_ROOT}/widgets/series_plot.cpp
  ${DC_DASH_ROOT}/widgets/dialog_dirs.cpp)
set_target_properties(deepcanvas-dashboard-widgets PROPERTIES AUTOMOC ON)
target_include_directories(deepcanvas-dashboard-widgets PUBLIC ${DC_DASH_ROOT})
target_link_libraries(deepcanvas-dashboard-widgets PUBLIC Qt6::Widgets Qt6::PrintSupport
                                                          QCustomPlotQt6::QCustomPlotQt6)
# The engine's Trainer has an emit() method that Qt's emit macro would erase
# wherever a Qt header comes first; Q_EMIT is used instead.
target_compile_definitions(deepcanvas-dashboard-widgets PRIVATE QT_NO_EMIT)
dc_warnings(deepcanvas-dashboard-widgets)

add_library(deepcanvas-dashboard STATIC
  ${DC_DASH_ROOT}/gui/project_context.cpp
  ${DC_DASH_ROOT}/gui/process_stats.cpp
  ${DC_DASH_ROOT}/gui/training_session.cpp
  ${DC_DASH_ROOT}/gui/training_plots.cpp
  ${DC_DASH_ROOT}/gui/training_diagnosis.cpp
  ${DC_DASH_ROOT}/gui/settings_form.cpp
  ${DC_DASH_ROOT}/gui/training_panel.cpp
  ${DC_DASH_ROOT}/gui/training_settings_view.cpp
  ${DC_DASH_ROOT}/gui/run_history.cpp
  ${DC_DASH_ROOT}/gui/training_panel_import.cpp
  ${DC_DASH_ROOT}/gui/run_follower.cpp
  ${DC_DASH_ROOT}/gui/training_tuning.cpp
  ${DC_DASH_ROOT}/gui/experiments_panel.h
  ${DC_DASH_ROOT}/gui/experiments_panel.cpp
  ${DC_DASH_ROOT}/gui/experiments_views.cpp
  ${DC_DASH_ROOT}/gui/search_space_editor.cpp
  ${DC_DASH_ROOT}/gui/sweep_options_form.cpp
  ${DC_DASH_ROOT}/gui/sweep_runner.cpp
  ${DC_DASH_ROOT}/gui/run_start.cpp
  ${DC_DASH_ROOT}/gui/lr_finder.cpp
  ${DC_DASH_ROOT}/gui/evaluation_view.cpp
  ${DC_DASH_ROOT}/gui/dataset_panel.cpp
  ${DC_DASH_ROOT}/gui/dataset_view.cpp
  ${DC_DASH_ROOT}/gui/inference_panel.cpp
  ${DC_DASH_ROOT}/gui/inference_weights.cpp
  ${DC_DASH_ROOT}/gui/inference_text.cpp
  ${DC_DASH_ROOT}/gui/inference_series.cpp
  ${DC_DASH_ROOT}/gui/dashboard_widget.cpp)
set_target_properties(deepcanvas-dashboard PROPERTIES AUTOMOC ON)
target_include_directories(deepcanvas-dashboard PUBLIC ${DC_DASH_ROOT})
target_link_libraries(deepcanvas-dashboard PUBLIC deepcanvas-dashboard-widgets dc::engine
                                           PRIVATE dc_json)
# The whole OpenCV (its package), not DEEPCANVAS_OPENCV=JPEG's part.
if(DC_HAVE_OPENCV_IMGCODECS)
  target_link_libraries(deepcanvas-dashboard PRIVATE opencv_core opencv_imgproc opencv_imgcodecs)
  target_include_directories(deepcanvas-dashboard SYSTEM PRIVATE ${OpenCV_INCLUDE_DIRS})
  target_compile_definitions(deepcanvas-dashboard PRIVATE DC_HAVE_OPENCV=1)
  # Camera capture in the inference panel, when OpenCV has videoio.
  find_package(OpenCV QUIET COMPONENTS videoio)
  if(TARGET opencv_videoio)
    target_link_libraries(deepcanvas-dashboard PRIVATE opencv_videoio)
    target_compile_definitions(deepcanvas-dashboard PRIVATE DC_HAVE_OPENCV_VIDEOIO=1)
  endif()
endif()
target_compile_definitions(deepcanvas-dashboard PRIVATE QT_NO_EMIT)
dc_warnings(deepcanvas-dashboard)

# UI event-loop latency while training (bench/ui_latency_bench.cpp; prints, not a test).
add_executable(ui_latency_bench ${DC_DASH_ROOT}/bench/ui_latency_bench.cpp)
target_link_libraries(ui_latency_bench PRIVATE deepcanvas-dashboard)
target_compile_definitions(ui_latency_bench PRIVATE DC_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
target_compile_definitions(ui_latency_bench PRIVATE QT_NO_EMIT)
dc_warnings(ui_latency_bench)

# The panels without the editor, for screenshots and trying them alone.
add_executable(deepcanvas-dashboard-demo ${DC_DASH_ROOT}/gui/dashboard_demo.cpp)
target_link_libraries(deepcanvas-dashboard-demo PRIVATE deepcanvas-dashboard)
target_compile_definitions(deepcanvas-dashboard-demo PRIVATE QT_NO_EMIT)
dc_warnings(deepcanvas-dashboard-demo)
