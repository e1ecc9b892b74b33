# The stable-pointer allocator (src/stable): lms_torch_* in liblms.so, and
# liblms_torch.so, the same allocator alone, which Python can dlopen
# (liblms.so cannot be loaded late: Note [jemalloc and the program's
# malloc]).  It calls the driver through dlopen, so only cuda.h is needed:
# LMS_CUDA_H_DIR, found by src/preload/preload.cmake, included before.

if(NOT LMS_CUDA_H_DIR)
  message(STATUS "lms: no cuda.h; lms_torch_* and liblms_torch.so are not built")
  return()
endif()

file(GLOB LMS_STABLE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
target_sources(lms_obj PRIVATE ${LMS_STABLE_SOURCES})
target_include_directories(lms_obj SYSTEM PRIVATE ${LMS_CUDA_H_DIR})

add_library(lms_torch SHARED ${LMS_STABLE_SOURCES}
  ${LMS_FRONTEND_CORE_SOURCES})
target_include_directories(lms_torch PRIVATE
  ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_include_directories(lms_torch SYSTEM PRIVATE ${LMS_CUDA_H_DIR})
target_link_libraries(lms_torch PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
target_link_options(lms_torch PRIVATE
  -Wl,--version-script=${CMAKE_SOURCE_DIR}/src/liblms.map -Wl,--no-undefined)

# Its tests run against the driver double (tests/driver_double), when
# preload.cmake has built it.
if(TARGET cuda_double AND CRITERION_FOUND)
  add_executable(test_stable ${CMAKE_SOURCE_DIR}/tests/driver_double/test_stable.c)
  target_include_directories(test_stable PRIVATE
    ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
    ${CMAKE_SOURCE_DIR}/tests/driver_double)
  target_include_directories(test_stable SYSTEM PRIVATE ${LMS_CUDA_H_DIR})
  target_link_libraries(test_stable PRIVATE lms_torch cuda_double
    PkgConfig::CRITERION Threads::Threads)
  add_test(NAME test_stable COMMAND test_stable --jobs 2)
  set_tests_properties(test_stable PROPERTIES LABELS cpu TIMEOUT 300
    ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_BINARY_DIR}/double")
endif()

# The fast path's cost on a GPU (prints figures; not a test).
if(LMS_HAVE_CUDA AND TARGET CUDA::cuda_driver)
  add_executable(lms_bench_torch_alloc ${CMAKE_SOURCE_DIR}/bench/bench_torch_alloc.c)
  target_include_directories(lms_bench_torch_alloc PRIVATE ${CMAKE_SOURCE_DIR}/include)
  target_link_libraries(lms_bench_torch_alloc PRIVATE lms_torch CUDA::cuda_driver)
endif()

# python/lms_torch.py with a stand-in for torch, on the driver double.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET cuda_double AND Python3_Interpreter_FOUND)
  add_test(NAME python_lms_torch
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/python/test_lms_torch.py)
  set(_py_env "LD_LIBRARY_PATH=${CMAKE_BINARY_DIR}/double"
              "LMS_TORCH_LIB=$<TARGET_FILE:lms_torch>")
  if(LMS_SANITIZE MATCHES "address")
    # An instrumented library loaded into an uninstrumented interpreter
    # needs the runtime first; the interpreter's own leaks are not ours.
    # LMS_ASAN_RUNTIME is the compiler's own (CMakeLists.txt).
    list(APPEND _py_env "LD_PRELOAD=${LMS_ASAN_RUNTIME}"
                        "ASAN_OPTIONS=detect_leaks=0")
  endif()
  set_tests_properties(python_lms_torch PROPERTIES LABELS cpu TIMEOUT 300
    ENVIRONMENT "${_py_env}")
endif()
