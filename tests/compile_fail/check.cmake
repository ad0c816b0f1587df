# Compiles SRC, expects failure, and checks the first "error:" line against the file's
# "// expect-error: <regex>" comment.
file(STRINGS ${SRC} expect_line REGEX "// expect-error: ")
string(REGEX REPLACE ".*// expect-error: " "" expect "${expect_line}")
# OPTIONS (a list): the language level and include path, shared with the precompiled header;
# PCH_ARGS (optional, a list): the options that read fuse.hpp precompiled (tests/CMakeLists.txt).
# fuse.hpp read precompiled ahead of the file is the header the file would have read only if the
# file includes it with no macro defined or undefined before: checked, so that a new file that does
# otherwise fails here instead of testing something else.
if(PCH_ARGS)
  file(READ ${SRC} text)
  string(FIND "${text}" "#include <fuse/fuse.hpp>" at)
  if(at LESS 0)
    message(FATAL_ERROR "${SRC} does not include <fuse/fuse.hpp>, which its check reads precompiled")
  endif()
  string(SUBSTRING "${text}" 0 ${at} before)
  if(before MATCHES "#[ \t]*(define|undef)")
    message(FATAL_ERROR "${SRC} changes a macro before including <fuse/fuse.hpp>, which its check reads precompiled")
  endif()
endif()
execute_process(
  COMMAND ${CXX} ${OPTIONS} -fsyntax-only ${PCH_ARGS} ${SRC}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but it must not")
endif()
string(REGEX MATCH "[^\n]*error:[^\n]*" first_error "${err}")
if(NOT first_error MATCHES "${expect}")
  message(FATAL_ERROR "first error line:\n  ${first_error}\ndoes not match:\n  ${expect}")
endif()
message(STATUS "ok: ${first_error}")
