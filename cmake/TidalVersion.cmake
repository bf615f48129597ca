# cmake -DSOURCE_DIR=... -DOUTPUT=... -P TidalVersion.cmake
#
# Writes OUTPUT (the C++ source of tidal::cli::TidalBuild) from SOURCE_DIR/VERSION,
# the release a source archive carries, and `git describe --tags --always --dirty`
# when SOURCE_DIR is a git checkout (empty otherwise, or when git fails). Runs on
# every build; configure_file rewrites OUTPUT only when its text changes, so a new
# commit recompiles this one file and relinks the executables, nothing more.
file(STRINGS "${SOURCE_DIR}/VERSION" TIDAL_VERSION LIMIT_COUNT 1)
string(STRIP "${TIDAL_VERSION}" TIDAL_VERSION)
if(NOT TIDAL_VERSION MATCHES "^[0-9A-Za-z.+-]+$")
  message(FATAL_ERROR "${SOURCE_DIR}/VERSION: \"${TIDAL_VERSION}\" (expected a version such as 0.1.0)")
endif()

set(TIDAL_REVISION "")
# .git is a directory in a clone and a file in a worktree.
if(EXISTS "${SOURCE_DIR}/.git")
  find_program(TIDAL_GIT git)
  if(TIDAL_GIT)
    execute_process(COMMAND "${TIDAL_GIT}" -C "${SOURCE_DIR}" describe --tags --always --dirty
                    OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE rc ERROR_QUIET)
    # Only the characters git describe produces: the text goes into a C++ string.
    if(rc EQUAL 0 AND describe MATCHES "^[0-9A-Za-z._/+-]+$")
      set(TIDAL_REVISION "${describe}")
    endif()
  endif()
endif()

configure_file("${CMAKE_CURRENT_LIST_DIR}/version.cc.in" "${OUTPUT}" @ONLY)
