# SPDX-License-Identifier: Apache-2.0
# EW_BUILD_FUZZ (the fuzz preset): the libFuzzer target fuzz/fuzz_api.c and its ctest entry.
# The harness links the library's own objects: the C files compiled by clang with the preset's
# -fsanitize=fuzzer-no-link and EW_SANITIZE's address,undefined (cmake/sanitize.cmake), the CUDA
# files by nvcc as usual, plus the static CUDA runtime. Those objects carry coverage hooks that only
# libFuzzer defines, so the shared library itself cannot be linked in this configuration: the fuzz
# build preset builds fuzz_api alone.
#
# The test fuzzes for $EW_FUZZ_SECONDS (default 60) from the committed seeds fuzz/corpus; new inputs
# go to BUILD/fuzz/corpus and crash inputs to BUILD/fuzz/artifacts, never into the repository. Any
# crash, sanitizer report, leak, timeout or out-of-memory makes libFuzzer exit non-zero, and so does
# an action that never ran or never saw a valid and a refused call (EW_FUZZ_EVERY_ACTION=1; the
# harness prints each action's counts at exit). It needs a machine without a GPU: the harness refuses
# to run where a CUDA device is visible. The test fuzz_seeds checks that the committed seeds are the
# ones fuzz/make_seeds.py writes from fuzz/fuzz_table.h and the public header.
add_executable(fuzz_api ${PROJECT_SOURCE_DIR}/fuzz/fuzz_api.c)
target_link_libraries(fuzz_api PRIVATE elementwise_objects CUDA::cudart_static stdc++ m)
target_compile_options(fuzz_api PRIVATE -Wall -Wextra)
target_include_directories(fuzz_api PRIVATE ${PROJECT_SOURCE_DIR}/fuzz ${PROJECT_SOURCE_DIR}/tests) # plan/layout_model.h
target_link_options(fuzz_api PRIVATE -fsanitize=fuzzer)
# clang drives the link (g++ has no libFuzzer); the C++ runtime of the nvcc objects is named above.
set_target_properties(fuzz_api PROPERTIES LINKER_LANGUAGE C RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)

add_test(NAME fuzz_api
  COMMAND sh -c [[rm -rf corpus artifacts && mkdir corpus artifacts &&
    exec "$0" -max_total_time="${EW_FUZZ_SECONDS:-60}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
         -artifact_prefix=artifacts/ corpus "$1"]] $<TARGET_FILE:fuzz_api> ${PROJECT_SOURCE_DIR}/fuzz/corpus
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
set_tests_properties(fuzz_api PROPERTIES LABELS fuzz TIMEOUT 1800
  ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:protect_shadow_gap=0;UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1;EW_FUZZ_EVERY_ACTION=1")

# The seeds alone, each run once: every action must run, and each judged one see a valid and a refused
# call, from the committed seeds (not only from what the fuzzing finds).
add_test(NAME fuzz_api_seeds COMMAND sh -c [[exec "$0" "$1"/*]] $<TARGET_FILE:fuzz_api> ${PROJECT_SOURCE_DIR}/fuzz/corpus
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
set_tests_properties(fuzz_api_seeds PROPERTIES LABELS fuzz TIMEOUT 120
  ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:protect_shadow_gap=0;UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1;EW_FUZZ_EVERY_ACTION=1")

find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME fuzz_seeds COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/fuzz/make_seeds.py --check)
set_tests_properties(fuzz_seeds PROPERTIES LABELS fuzz)
