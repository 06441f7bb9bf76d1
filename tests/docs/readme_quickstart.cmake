# Compiles and links the README's quick start against the library as built, as strict C99.
# cmake -DREADME=... -DCC=... -DINCLUDE_DIR=... -DLIBRARY=... -DWORK_DIR=... -P readme_quickstart.cmake
file(READ ${README} text)
string(REGEX MATCH "## Quick start[^`]*```c\n([^`]*)```" found "${text}")
if(NOT found)
  message(FATAL_ERROR "no ```c block under '## Quick start' in ${README}")
endif()
file(WRITE ${WORK_DIR}/quickstart.c "${CMAKE_MATCH_1}\nint main(void) { return 0; }\n")
execute_process(
  COMMAND ${CC} -std=c99 -pedantic -Wall -Wextra -Werror -I${INCLUDE_DIR} ${WORK_DIR}/quickstart.c ${LIBRARY}
          -o ${WORK_DIR}/quickstart
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the README's quick start does not build")
endif()
