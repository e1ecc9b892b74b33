# liblms_preload.so: the LD_PRELOAD interposer behind `lms run`, and its
# tests against a double of the CUDA driver (tests/driver_double).
#
# It is built from its own sources plus the few core files the options
# table needs (options, log, link, status), not from lms_internal: that
# links jemalloc, and Debian's libjemalloc exports malloc, so a preload
# that depended on it would replace the malloc of every program it is
# loaded into (see Note [jemalloc and the program's malloc]).  Only the
# driver's header is needed, so nvcc need not be present; without cuda.h
# the preload and its tests are skipped.

find_path(LMS_CUDA_H_DIR cuda.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDA_HOME}/include
        /usr/local/cuda/include)
if(NOT LMS_CUDA_H_DIR)
  message(STATUS "lms: no cuda.h; liblms_preload.so is not built")
  return()
endif()

file(GLOB LMS_PRELOAD_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/*.c)
add_library(lms_preload SHARED ${LMS_PRELOAD_SOURCES}
  ${LMS_FRONTEND_CORE_SOURCES})
set_target_properties(lms_preload PROPERTIES OUTPUT_NAME lms_preload
  LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/preload.map)
target_include_directories(lms_preload PRIVATE
  ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_include_directories(lms_preload SYSTEM PRIVATE ${LMS_CUDA_H_DIR})
target_link_libraries(lms_preload PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
target_link_options(lms_preload PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/preload.map
  -Wl,--no-undefined)
# `lms run` finds it in ../lib beside bin/lms.
add_dependencies(lms_cli lms_preload)

include(${CMAKE_SOURCE_DIR}/tests/driver_double/preload_tests.cmake OPTIONAL)
