# Installs fuse from the build tree BUILD into a fresh prefix under WORK, then configures, builds and
# runs tests/package/consumer against it with find_package(fuse CONFIG): what README's "Using fuse
# from CMake" promises.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed:\n${err}")
endif()
foreach(step
    "${CMAKE_COMMAND};-S;${SRC};-B;${WORK}/build;-G;${GEN};-DCMAKE_CXX_COMPILER=${CXX};-DCMAKE_BUILD_TYPE=Release;-DCMAKE_PREFIX_PATH=${WORK}/prefix"
    "${CMAKE_COMMAND};--build;${WORK}/build"
    "${WORK}/build/consumer")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${step} failed:\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "${out}")
