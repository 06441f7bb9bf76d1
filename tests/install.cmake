# SPDX-License-Identifier: Apache-2.0
# The shared library and its install tree (label cpu), as the ABI contract and consumers see them:
# tests/scripts/check_library.sh on the built library, then tests/scripts/check_install.sh on a fresh
# install of this build, one ctest entry per way of consuming it (the README's quick start among them).
# With a GPU the consumers and examples run their work on it; EW_REQUIRE_GPU=1 makes that a must.
set(EW_TEST_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/scripts)
add_test(NAME shared_library
  COMMAND bash ${EW_TEST_SCRIPTS}/check_library.sh $<TARGET_FILE_DIR:elementwise> ${EW_GENERATED_INCLUDE_DIR}/elementwise.h)
set_tests_properties(shared_library PROPERTIES LABELS cpu)

# The toolkit's root, for the examples' own use of the CUDA runtime.
get_filename_component(EW_CUDA_HOME "${CUDAToolkit_BIN_DIR}" DIRECTORY)
foreach(mode tree pkgconfig find_package examples)
  add_test(NAME install_${mode} COMMAND bash ${EW_TEST_SCRIPTS}/check_install.sh ${PROJECT_BINARY_DIR} ${mode})
  set_tests_properties(install_${mode} PROPERTIES LABELS cpu
    ENVIRONMENT "CC=${CMAKE_C_COMPILER};CMAKE_GENERATOR=${CMAKE_GENERATOR};CUDA_HOME=${EW_CUDA_HOME}")
endforeach()
# Label examples: left out of the asan preset's run, where an example that links the static CUDA
# runtime without the sanitizer's runtime loaded first crashes in the loader before main.
set_tests_properties(install_examples PROPERTIES LABELS "cpu;examples")
