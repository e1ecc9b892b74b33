# Tests of liblms_preload.so against a double of the CUDA driver, built
# here as libcuda.so.1 in its own directory (${CMAKE_BINARY_DIR}/double)
# so that LD_LIBRARY_PATH can put it in front of any real driver.
# Included from src/preload/preload.cmake, which has found cuda.h.
#
# Sanitizer builds: an instrumented program needs the sanitizer runtime
# first in the process, so preload_tests.sh puts libasan in front of the
# interposer in LD_PRELOAD (PT_SAN_RT), and for `lms run`, which prepends
# the interposer to whatever LD_PRELOAD holds, it turns off ASan's check
# of that order (the runtime is loaded, only no longer first, which is
# enough as the interposer defines no function ASan intercepts).

set(_dd ${CMAKE_SOURCE_DIR}/tests/driver_double)

add_library(cuda_double SHARED ${_dd}/cuda_double.c)
set_target_properties(cuda_double PROPERTIES
  OUTPUT_NAME cuda SOVERSION 1
  C_VISIBILITY_PRESET default
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/double)
target_include_directories(cuda_double SYSTEM PRIVATE ${LMS_CUDA_H_DIR})
# Its own calls stay inside it, never reaching an interposer.
target_link_options(cuda_double PRIVATE -Wl,-Bsymbolic)
target_link_libraries(cuda_double PRIVATE Threads::Threads ${CMAKE_DL_LIBS})

foreach(lib shadow_a shadow_b)
  add_library(${lib} SHARED ${_dd}/${lib}.c)
  set_target_properties(${lib} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/double/shadow)
  target_link_libraries(${lib} PRIVATE ${CMAKE_DL_LIBS})
endforeach()

# Linked with the driver (the direct route) ...
add_executable(preload_prog_linked ${_dd}/preload_prog.c)
target_compile_definitions(preload_prog_linked PRIVATE PRELOAD_PROG_LINKED=1)
target_link_libraries(preload_prog_linked PRIVATE cuda_double
  Threads::Threads ${CMAKE_DL_LIBS})
# ... and not (dlopen and cuGetProcAddress, as static cudart does); this
# one also carries the RTLD_NEXT libraries, a before b.
add_executable(preload_prog_dl ${_dd}/preload_prog.c)
target_compile_definitions(preload_prog_dl PRIVATE PRELOAD_PROG_SHADOW=1)
target_link_libraries(preload_prog_dl PRIVATE shadow_a shadow_b
  Threads::Threads ${CMAKE_DL_LIBS})
foreach(t preload_prog_linked preload_prog_dl)
  target_include_directories(${t} PRIVATE ${_dd})
  target_include_directories(${t} SYSTEM PRIVATE ${LMS_CUDA_H_DIR})
endforeach()

# The compiler's own address-sanitizer runtime (CMakeLists.txt), empty
# without that sanitizer.
set(_san_rt "${LMS_ASAN_RUNTIME}")

set(LMS_PRELOAD_TESTS
  resolve_direct resolve_dlopen resolve_procaddr resolve_procaddr1
  resolve_rules resolve_needs_preload
  limit_direct limit_dlopen limit_procaddr limit_procaddr1 launch_kernels
  prefetch_loop
  oversub oversub_without_preload lms_rule async threads
  dlsym_passthrough malloc_untouched deps bad_env
  run_env run_stats run_status run_bad)
foreach(case ${LMS_PRELOAD_TESTS})
  add_test(NAME preload_${case} COMMAND ${_dd}/preload_tests.sh ${case})
  set_tests_properties(preload_${case} PROPERTIES LABELS cpu TIMEOUT 300
    ENVIRONMENT "PT_PRELOAD=$<TARGET_FILE:lms_preload>;PT_DOUBLE_DIR=${CMAKE_BINARY_DIR}/double;PT_LINKED=$<TARGET_FILE:preload_prog_linked>;PT_DL=$<TARGET_FILE:preload_prog_dl>;PT_LMS=$<TARGET_FILE:lms_cli>;PT_SHADOW_B=$<TARGET_FILE:shadow_b>;PT_SAN_RT=${_san_rt}")
endforeach()
