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

# ONNX export and its model checker (libonnx-dev, which brings protobuf).
# Optional: the bare GPU build machine has neither, and the engine proper
# never needs protobuf.
# ONNX's CMake package names protobuf::libprotobuf without finding it.
find_package(Protobuf QUIET)
set(DC_HAVE_ONNX OFF)
if(Protobuf_FOUND)
  find_package(ONNX CONFIG QUIET)
  set(DC_HAVE_ONNX ${ONNX_FOUND})
endif()

# CPU GEMM. oneDNN's sgemm is the default (faster on the CNN's shapes,
# measured in docs/BENCHMARKS.md); OpenBLAS, the OpenMP build, stays linked
# for comparison runs (DC_GEMM=openblas). The OpenMP build shares our OpenMP
# thread pool instead of a second pthread pool spinning against it, and
# RUNPATH points at its folder so the Debian alternatives choice for
# libopenblas.so.0 does not switch it under us. A machine with neither (the
# bare GPU build machine) gets portable loops: correct, slow, enough for the
# CPU reference in CUDA tests.
add_library(dc_blas INTERFACE)
find_library(DC_DNNL_LIB dnnl)
find_path(DC_DNNL_INCLUDE dnnl.h)
if(DC_DNNL_LIB AND DC_DNNL_INCLUDE)
  target_link_libraries(dc_blas INTERFACE ${DC_DNNL_LIB})
  target_include_directories(dc_blas SYSTEM INTERFACE ${DC_DNNL_INCLUDE})
  target_compile_definitions(dc_blas INTERFACE DC_HAVE_DNNL=1)
endif()
set(DC_OPENBLAS_DIR /usr/lib/x86_64-linux-gnu/openblas-openmp CACHE PATH "OpenBLAS library folder")
set(DC_OPENBLAS_INCLUDE /usr/include/x86_64-linux-gnu/openblas-openmp CACHE PATH "OpenBLAS headers")
find_library(DC_OPENBLAS_LIB NAMES openblas PATHS ${DC_OPENBLAS_DIR} NO_DEFAULT_PATH)
if(NOT DC_OPENBLAS_LIB)
  find_library(DC_OPENBLAS_LIB NAMES openblas)
  if(DC_OPENBLAS_LIB)
    get_filename_component(DC_OPENBLAS_DIR ${DC_OPENBLAS_LIB} DIRECTORY)
  endif()
  set(DC_OPENBLAS_INCLUDE "")
endif()
if(DC_OPENBLAS_LIB)
  target_link_libraries(dc_blas INTERFACE ${DC_OPENBLAS_LIB})
  target_compile_definitions(dc_blas INTERFACE DC_HAVE_OPENBLAS=1)
  if(DC_OPENBLAS_INCLUDE AND EXISTS ${DC_OPENBLAS_INCLUDE})
    target_include_directories(dc_blas SYSTEM INTERFACE ${DC_OPENBLAS_INCLUDE})
  endif()
  # Build tree only: installed binaries use oneDNN by default and leave the
  # OpenBLAS variant to Debian's alternatives (a custom RPATH is a lintian
  # error).
  set(CMAKE_BUILD_RPATH ${DC_OPENBLAS_DIR})
endif()
if(NOT DC_DNNL_LIB AND NOT DC_OPENBLAS_LIB)
  message(WARNING "Neither oneDNN nor OpenBLAS found: CPU GEMMs use portable loops (slow)")
endif()
# RUNPATH is consulted before the ld.so cache; keep it on executables and libs.
add_link_options(-Wl,--enable-new-dtags)

set(DC_HAVE_OPENCV OFF)
set(DC_HAVE_OPENCV_IMGCODECS OFF)
if(DEEPCANVAS_OPENCV STREQUAL "JPEG")
  # OpenCV's core and imgproc without its CMake package or imgcodecs: the
  # lent GPU machine, which gets them from installer/gpu/prepare-carry.sh
  # --photos (Debian's imgcodecs pulls in GDAL, about 200 MB, more than a
  # call may carry). Pictures are then resized as everywhere else, and
  # decoded by libjpeg alone: JPEG files only, which image_decode.cpp says
  # of others. Only when asked: the tests assume every format.
  find_path(DC_OPENCV_INCLUDE opencv2/imgproc.hpp PATH_SUFFIXES opencv4)
  find_library(DC_OPENCV_CORE opencv_core)
  find_library(DC_OPENCV_IMGPROC opencv_imgproc)
  find_package(JPEG REQUIRED)
  if(NOT DC_OPENCV_INCLUDE OR NOT DC_OPENCV_CORE OR NOT DC_OPENCV_IMGPROC)
    message(FATAL_ERROR "DEEPCANVAS_OPENCV=JPEG: OpenCV's core and imgproc headers and "
                        "libraries not found (CMAKE_PREFIX_PATH)")
  endif()
  foreach(dc_m core imgproc)
    string(TOUPPER ${dc_m} dc_M)
    if(NOT TARGET opencv_${dc_m})
      add_library(opencv_${dc_m} UNKNOWN IMPORTED)
      set_target_properties(opencv_${dc_m} PROPERTIES IMPORTED_LOCATION ${DC_OPENCV_${dc_M}}
                                                     INTERFACE_INCLUDE_DIRECTORIES ${DC_OPENCV_INCLUDE})
    endif()
  endforeach()
  set(OpenCV_INCLUDE_DIRS ${DC_OPENCV_INCLUDE})
  set(DC_HAVE_OPENCV ON)
  message(STATUS "OpenCV core and imgproc without imgcodecs: image files are JPEG only")
elseif(NOT DEEPCANVAS_OPENCV STREQUAL "OFF")
  if(DEEPCANVAS_OPENCV STREQUAL "ON")
    find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
  else()
    find_package(OpenCV QUIET COMPONENTS core imgproc imgcodecs)
  endif()
  if(OpenCV_FOUND)
    set(DC_HAVE_OPENCV ON)
    set(DC_HAVE_OPENCV_IMGCODECS ON)
  endif()
endif()
