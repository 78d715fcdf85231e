# Project-wide warnings, applied per target through dc_warnings(target).
function(dc_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(DEEPCANVAS_WERROR OR DEFINED ENV{CI})
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
