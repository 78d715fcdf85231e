# Third-party dependencies, all from Debian packages (installer/install-deps.sh).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(ZLIB REQUIRED)

# nlohmann-json is header-only; DC_JSON_INCLUDE_DIR lets the bare GPU build
# machine pass a folder of headers instead of the Debian package.
set(DC_JSON_INCLUDE_DIR "" CACHE PATH "Folder holding nlohmann/json.hpp (empty: find_package)")
if(DC_JSON_INCLUDE_DIR)
  add_library(dc_json INTERFACE)
  target_include_directories(dc_json SYSTEM INTERFACE ${DC_JSON_INCLUDE_DIR})
else()
  find_package(nlohmann_json 3.10 REQUIRED)
  add_library(dc_json INTERFACE)
  target_link_libraries(dc_json INTERFACE nlohmann_json::nlohmann_json)
endif()

# OpenBLAS, the OpenMP build: it shares the OpenMP thread pool with our own
# kernels instead of a second pthread pool spinning against it (measured in
# docs/BENCHMARKS.md). RUNPATH points at its folder so the Debian
# alternatives choice for libopenblas.so.0 does not switch it under us.
set(DC_OPENBLAS_DIR /usr/lib/x86_64-linux-gnu/openblas-openmp CACHE PATH "OpenBLAS library folder")
set(DC_OPENBLAS_INCLUDE /usr/include/x86_64-linux-gnu/openblas-openmp CACHE PATH "OpenBLAS headers")
find_library(DC_OPENBLAS_LIB NAMES openblas PATHS ${DC_OPENBLAS_DIR} NO_DEFAULT_PATH)
if(NOT DC_OPENBLAS_LIB)
  find_library(DC_OPENBLAS_LIB NAMES openblas REQUIRED)
  get_filename_component(DC_OPENBLAS_DIR ${DC_OPENBLAS_LIB} DIRECTORY)
  set(DC_OPENBLAS_INCLUDE "")
endif()
add_library(dc_blas INTERFACE)
target_link_libraries(dc_blas INTERFACE ${DC_OPENBLAS_LIB})
if(DC_OPENBLAS_INCLUDE AND EXISTS ${DC_OPENBLAS_INCLUDE})
  target_include_directories(dc_blas SYSTEM INTERFACE ${DC_OPENBLAS_INCLUDE})
endif()
set(CMAKE_BUILD_RPATH ${DC_OPENBLAS_DIR})
set(CMAKE_INSTALL_RPATH ${DC_OPENBLAS_DIR})
# RUNPATH is consulted before the ld.so cache; keep it on executables and libs.
add_link_options(-Wl,--enable-new-dtags)

set(DC_HAVE_OPENCV OFF)
if(NOT DEEPCANVAS_OPENCV STREQUAL "OFF")
  if(DEEPCANVAS_OPENCV STREQUAL "ON")
    find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
  else()
    find_package(OpenCV QUIET COMPONENTS core imgproc imgcodecs)
  endif()
  if(OpenCV_FOUND)
    set(DC_HAVE_OPENCV ON)
  endif()
endif()
