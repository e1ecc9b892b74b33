# The fuzz harnesses of fuzz/ (see fuzz/fuzz.h): the trace reader and
# writer, the options parsers, the stats-file reader and a command's flags
# table (src/cli/flags.c) on hostile input.
#
# Every build replays the seed corpora and the saved regressions through
# each harness, linked with replay_main.c instead of libFuzzer, as the
# tests fuzz_<harness>_replay: an input once found to crash stays a test
# in the plain and the sanitizer builds, with any compiler.
#
# -DLMS_FUZZ=ON (clang only) builds the harnesses with libFuzzer, the
# address and undefined-behaviour sanitizers and coverage, as fuzz_<name>,
# and adds the tests fuzz_<name> (label fuzz), each a search of
# LMS_FUZZ_SECONDS seconds by fuzz/run.sh that fails on any crash, hang or
# sanitizer report.  Only the harnesses and the sources they call are
# instrumented, in a library of their own: the rest of the build is as it
# would be without the option.  `make fuzz` and `make test-fuzz` drive it.

set(LMS_FUZZ_HARNESSES trace options statsfile flags)
# The command-line sources a harness needs beyond the core.
set(LMS_FUZZ_EXTRA_statsfile ${CMAKE_SOURCE_DIR}/src/cli/statsfile.c)
set(LMS_FUZZ_EXTRA_flags ${CMAKE_SOURCE_DIR}/src/cli/flags.c
    ${CMAKE_SOURCE_DIR}/src/cli/args.c)

foreach(h ${LMS_FUZZ_HARNESSES})
  add_executable(fuzz_${h}_replay fuzz/fuzz_${h}.c fuzz/replay_main.c
                 ${LMS_FUZZ_EXTRA_${h}})
  target_link_libraries(fuzz_${h}_replay PRIVATE lms_internal)
  add_test(NAME fuzz_${h}_replay COMMAND fuzz_${h}_replay
           ${CMAKE_SOURCE_DIR}/fuzz/corpus/${h}
           ${CMAKE_SOURCE_DIR}/fuzz/regressions/${h})
  set_tests_properties(fuzz_${h}_replay PROPERTIES LABELS cpu TIMEOUT 300)
endforeach()

if(LMS_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "LMS_FUZZ=ON needs clang, whose libFuzzer the "
      "harnesses link; this build's C compiler is ${CMAKE_C_COMPILER_ID} "
      "(configure with -DCMAKE_C_COMPILER=clang, or use `make fuzz`)")
  endif()
  if(LMS_SANITIZE)
    message(FATAL_ERROR "LMS_FUZZ=ON chooses its own sanitizers; configure "
      "it in a build without LMS_SANITIZE (now '${LMS_SANITIZE}')")
  endif()
  set(_fuzz_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined
                  -fno-omit-frame-pointer -g)
  # Only what the harnesses reach: core/ (status, options, stats, log,
  # links), the workload and trace code, the stats-file reader and the
  # flags parser.
  file(GLOB _fuzz_core_sources CONFIGURE_DEPENDS src/core/*.c)
  add_library(lms_fuzz_core STATIC ${_fuzz_core_sources}
              ${CMAKE_SOURCE_DIR}/src/graph/trace.c
              ${CMAKE_SOURCE_DIR}/src/graph/workload.c
              ${CMAKE_SOURCE_DIR}/src/cli/statsfile.c
              ${CMAKE_SOURCE_DIR}/src/cli/flags.c
              ${CMAKE_SOURCE_DIR}/src/cli/args.c)
  target_include_directories(lms_fuzz_core PUBLIC
    ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(lms_fuzz_core PRIVATE -fsanitize=fuzzer-no-link
                         ${_fuzz_flags})
  target_link_libraries(lms_fuzz_core PUBLIC ${LMS_DEPS})
  foreach(h ${LMS_FUZZ_HARNESSES})
    add_executable(fuzz_${h} fuzz/fuzz_${h}.c)
    target_compile_options(fuzz_${h} PRIVATE -fsanitize=fuzzer ${_fuzz_flags})
    target_link_options(fuzz_${h} PRIVATE -fsanitize=fuzzer ${_fuzz_flags})
    target_link_libraries(fuzz_${h} PRIVATE lms_fuzz_core)
    add_test(NAME fuzz_${h}
      COMMAND sh ${CMAKE_SOURCE_DIR}/fuzz/run.sh $<TARGET_FILE:fuzz_${h}>
              ${LMS_FUZZ_SECONDS} ${CMAKE_BINARY_DIR}/fuzz-work/${h}
              ${CMAKE_SOURCE_DIR}/fuzz/${h}.dict
              ${CMAKE_SOURCE_DIR}/fuzz/corpus/${h}
              ${CMAKE_SOURCE_DIR}/fuzz/regressions/${h})
    math(EXPR _timeout "${LMS_FUZZ_SECONDS} + 300")
    set_tests_properties(fuzz_${h} PROPERTIES LABELS fuzz
                         TIMEOUT ${_timeout})
  endforeach()
endif()
