# Sanitizer and fuzzing builds (issue 17). Both apply to every C/C++ target
# of the build (engine, CLI, tests), never to CUDA sources, so use a separate
# build folder:
#   cmake -S . -B build-asan -DDEEPCANVAS_SANITIZE=address,undefined -DDEEPCANVAS_GUI=OFF
#   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 \
#         -DDEEPCANVAS_FUZZ=ON -DDEEPCANVAS_GUI=OFF -DDEEPCANVAS_CUDA=OFF
set(DEEPCANVAS_SANITIZE "" CACHE STRING
    "Sanitizers for the engine, CLI and tests: address,undefined or thread (empty: none)")
option(DEEPCANVAS_FUZZ "Build the libFuzzer targets in tests/fuzz (clang; implies address,undefined)"
       OFF)
set(DEEPCANVAS_FUZZ_SECONDS 30 CACHE STRING "How long each ctest fuzz run (label fuzz) lasts")

if(DEEPCANVAS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DEEPCANVAS_FUZZ needs clang (libFuzzer): configure a separate build "
                        "folder with -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14")
  endif()
  if(NOT DEEPCANVAS_SANITIZE)
    set(DEEPCANVAS_SANITIZE "address,undefined")
  endif()
endif()

if(DEEPCANVAS_SANITIZE)
  if(DEEPCANVAS_SANITIZE MATCHES "thread" AND DEEPCANVAS_SANITIZE MATCHES "address")
    message(FATAL_ERROR "DEEPCANVAS_SANITIZE: thread cannot be combined with address")
  endif()
  # Any report fails the test that triggered it instead of scrolling past.
  set(dc_san -fsanitize=${DEEPCANVAS_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  if(DEEPCANVAS_FUZZ)
    # Coverage feedback for libFuzzer in the code under test; the fuzz
    # executables add the fuzzer's main themselves.
    list(APPEND dc_san -fsanitize=fuzzer-no-link)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${dc_san}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=${DEEPCANVAS_SANITIZE}>")
  message(STATUS "DeepCanvas: sanitizers ${DEEPCANVAS_SANITIZE}")
endif()
