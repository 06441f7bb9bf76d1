# The README's quick start must keep compiling against the library.
add_test(NAME readme_quickstart
  COMMAND ${CMAKE_COMMAND} -DREADME=${PROJECT_SOURCE_DIR}/README.md -DCC=${CMAKE_C_COMPILER}
          -DINCLUDE_DIR=${EW_GENERATED_INCLUDE_DIR} -DLIBRARY=$<TARGET_FILE:elementwise>
          -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/docs/readme_quickstart.cmake)
set_tests_properties(readme_quickstart PROPERTIES LABELS cpu)
