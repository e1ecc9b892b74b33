# Tests that run programs rather than Criterion suites: the command line's
# answers to bad input, and the dynamic-linking promise of liblms.so.

add_test(NAME cli_bad_input
  COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_bad_input.sh $<TARGET_FILE:lms_cli>)
set_tests_properties(cli_bad_input PROPERTIES LABELS cpu)

add_test(NAME cli_tune
  COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_tune.sh $<TARGET_FILE:lms_cli>)
set_tests_properties(cli_tune PROPERTIES LABELS cpu TIMEOUT 600)

add_test(NAME cli_report
  COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_report.sh $<TARGET_FILE:lms_cli>)
set_tests_properties(cli_report PROPERTIES LABELS cpu TIMEOUT 300)

# The documentation's simulator tables are this build's output.
add_test(NAME docs_figures
  COMMAND ${CMAKE_SOURCE_DIR}/tests/docs_figures.sh ${CMAKE_BINARY_DIR})
set_tests_properties(docs_figures PROPERTIES LABELS cpu TIMEOUT 600
  SKIP_RETURN_CODE 77)

# The least time of bench/workloads/lp_bound.py's programme: as worked by
# hand, and never beaten by a run of `lms sim`; skipped (77, with why)
# without scipy.  Plain builds only: it times the simulator's runs.
if(NOT LMS_SANITIZE)
  add_test(NAME lp_bound
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/lp_bound_test.py $<TARGET_FILE:lms_cli>)
  set_tests_properties(lp_bound PROPERTIES LABELS cpu TIMEOUT 900
    SKIP_RETURN_CODE 77)
endif()

# report.html in headless Chromium: the charts load, the verdict reads as
# a list, no Markdown shows; skipped (77, with why) without Chromium.
add_test(NAME report_render
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/report_render.py $<TARGET_FILE:lms_cli>)
set_tests_properties(report_render PROPERTIES LABELS cpu TIMEOUT 600
  SKIP_RETURN_CODE 77)

add_executable(malloc_owner tests/malloc_owner.c)
target_link_libraries(malloc_owner PRIVATE lms ${CMAKE_DL_LIBS})
add_executable(malloc_owner_plain tests/malloc_owner.c)
target_include_directories(malloc_owner_plain PRIVATE ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(malloc_owner_plain PRIVATE ${CMAKE_DL_LIBS})
target_compile_definitions(malloc_owner_plain PRIVATE LMS_NO_LINK=1)

add_test(NAME malloc_untouched_when_linked
  COMMAND malloc_owner --use-lms)
# Preloading liblms.so puts jemalloc into the process as well.  The
# sanitizers' runtime must come first in a preload, so this one runs in
# plain builds only.
if(NOT LMS_SANITIZE)
  add_test(NAME malloc_untouched_when_preloaded COMMAND malloc_owner_plain)
  set_tests_properties(malloc_untouched_when_preloaded PROPERTIES
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:lms>")
endif()
set_tests_properties(malloc_untouched_when_linked PROPERTIES LABELS cpu)

add_test(NAME cli_share
  COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_share.sh $<TARGET_FILE:lms_cli>)
set_tests_properties(cli_share PROPERTIES LABELS cpu)

# The stats file reader and writer of the command line (src/cli/statsfile.c),
# which the library does not hold.
add_executable(unit_statsfile tests/unit_statsfile.c src/cli/statsfile.c)
target_include_directories(unit_statsfile PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(unit_statsfile PRIVATE lms_internal PkgConfig::CRITERION)
add_test(NAME unit_statsfile COMMAND unit_statsfile --jobs 1)
set_tests_properties(unit_statsfile PROPERTIES LABELS cpu)

# Workloads lms was not tuned on: no refusal of what fits.
# Under the sanitizers the sweep with waits measured is left to the plain
# build: with both sweeps this test took 629 s plain and 1355 s under
# GCC's sanitizers on a machine of 2 cores, of the 1500 allowed, and at
# that pace the plain and both sanitizer stages would pass CI's 90
# minutes.  Its sweep there takes two of the four links (823 s and 883 s
# under GCC's and clang's sanitizers with all four, at a CI run of 89 of
# its 90 minutes).
set(_wl_mode "")
if(LMS_SANITIZE)
  set(_wl_mode sanitized)
endif()
add_test(NAME cli_workloads
  COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_workloads.sh $<TARGET_FILE:lms_cli>
          ${_wl_mode})
set_tests_properties(cli_workloads PROPERTIES LABELS cpu TIMEOUT 1500)

# lms starts and simulates without cuDNN and cuBLAS; lms-bench-net, where
# built, is the one that needs them.
if(TARGET lms_bench_net)
  add_test(NAME cli_no_cudnn COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_no_cudnn.sh
    $<TARGET_FILE:lms_cli> $<TARGET_FILE:lms_bench_net>)
else()
  add_test(NAME cli_no_cudnn COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_no_cudnn.sh
    $<TARGET_FILE:lms_cli>)
endif()
set_tests_properties(cli_no_cudnn PROPERTIES LABELS cpu)

# Ranks sharing one host link for real, each its own process.
add_test(NAME cli_link_ranks
  COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_link_ranks.sh $<TARGET_FILE:lms_cli>)
set_tests_properties(cli_link_ranks PROPERTIES LABELS cpu TIMEOUT 600)
