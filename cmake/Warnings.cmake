# Project-wide warnings, applied per target through dc_warnings(target).
function(dc_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  # GCC 12's -Wrestrict misfires inside libstdc++'s string operator+ at -O3
  # (GCC bug 105329); which call sites trip it depends on inlining, so -Werror
  # would fail CI at random places. The warning finds nothing real here.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
  endif()
  if(DEEPCANVAS_WERROR OR DEFINED ENV{CI})
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
