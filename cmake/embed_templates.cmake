# Writes OUT: one {"relative/path", R"DCTPL(...)DCTPL"} entry per file under
# DIR, for a std::map initializer (engine/export/pytorch_templates.cpp).
# Run as: cmake -DDIR=... -DOUT=... -P embed_templates.cmake
file(GLOB_RECURSE files RELATIVE ${DIR} ${DIR}/*)
list(SORT files)
set(body "")
foreach(f ${files})
  file(READ ${DIR}/${f} text)
  # A raw string literal cannot hold its own delimiter; no template does.
  string(FIND "${text}" ")DCTPL\"" bad)
  if(NOT bad EQUAL -1)
    message(FATAL_ERROR "${f} contains the raw-string delimiter )DCTPL\"")
  endif()
  string(APPEND body "{\"${f}\", R\"DCTPL(${text})DCTPL\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
