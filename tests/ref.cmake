# SPDX-License-Identifier: Apache-2.0
# For tests/ref.cmake (included by tests/CMakeLists.txt): the independent CPU reference and its CMocka test.
# Plain C11 + libm, no CUDA; elementwise.h comes from the `elementwise` target's include directories.
add_library(ew_ref STATIC ${CMAKE_CURRENT_SOURCE_DIR}/ref/ref.c)
target_compile_features(ew_ref PUBLIC c_std_11)
target_include_directories(ew_ref PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/ref
                           $<TARGET_PROPERTY:elementwise,INTERFACE_INCLUDE_DIRECTORIES>)
target_link_libraries(ew_ref PUBLIC m)
ew_add_test(test_reference SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/ref/test_reference.c LIBS ew_ref)
target_compile_definitions(test_reference PRIVATE EW_SEMANTICS_MD="${PROJECT_SOURCE_DIR}/docs/semantics.md")
