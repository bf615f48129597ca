# Warnings for every first-party target.
function(tidal_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
  if(TIDAL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# tidal_private_includes(TARGET): what TARGET may include privately, as "<layer>/...":
# its own layer's folder src/<layer>, through a link in the build tree, and no
# other layer's (a private header of another layer does not compile). Targets
# outside src/ get none. scripts/check-layers.py checks the public headers' order.
function(tidal_private_includes target)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
  if(rel MATCHES "^\\.\\.")
    return()
  endif()
  string(REGEX REPLACE "/.*" "" layer "${rel}")
  set(dir ${CMAKE_BINARY_DIR}/private-include/${layer})
  if(NOT IS_SYMLINK ${dir}/${layer})
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${layer} ${dir}/${layer} SYMBOLIC)
  endif()
  target_include_directories(${target} PRIVATE ${dir})
endfunction()

# tidal_library(NAME SOURCES ... DEPS ...): one library per layer, aliased tidal::NAME.
function(tidal_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(tidal_${name} STATIC ${ARG_SOURCES})
  add_library(tidal::${name} ALIAS tidal_${name})
  target_include_directories(tidal_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  tidal_private_includes(tidal_${name})
  target_link_libraries(tidal_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  tidal_warnings(tidal_${name})
endfunction()

# tidal_test(NAME SOURCES ... DEPS ... [USES_CLI] [INTEGRATION]): a GoogleTest binary
# registered with CTest. Labelled `unit`, or `integration` when it starts other
# processes (USES_CLI: it runs the `tidal` executable, which it then depends on;
# INTEGRATION: it starts something else, e.g. Prometheus). Building one test
# builds only what it links (and `tidal` with USES_CLI).
function(tidal_test name)
  if(NOT TIDAL_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "USES_CLI;INTEGRATION" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  tidal_private_includes(${name})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} tidal_testing GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE
    TIDAL_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    TIDAL_TESTDATA_DIR="${PROJECT_SOURCE_DIR}/testdata")
  set(label unit)
  set(environment "")
  if(ARG_USES_CLI)
    target_compile_definitions(${name} PRIVATE TIDAL_BINARY="$<TARGET_FILE:tidal>")
    add_dependencies(${name} tidal)
    set(environment "TIDAL_BINARY=$<TARGET_FILE:tidal>")
    set(label integration)
  endif()
  if(ARG_INTEGRATION)
    set(label integration)
  endif()
  tidal_warnings(${name})
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST
                       PROPERTIES LABELS ${label} ENVIRONMENT "${environment}")
endfunction()

# tidal_fuzzer(NAME DEPS ... [SEEDS glob ...] [DICT name]): the libFuzzer target
# fuzz_NAME from fuzz/NAME.cc. SEEDS are globs under the source tree copied into
# its corpus besides fuzz/corpus/NAME/; DICT names fuzz/dict/NAME.dict. Each target
# is one line of the manifest scripts/fuzz.sh runs.
function(tidal_fuzzer name)
  cmake_parse_arguments(ARG "" "DICT" "DEPS;SEEDS" ${ARGN})
  add_executable(fuzz_${name} ${name}.cc)
  target_link_libraries(fuzz_${name} PRIVATE ${ARG_DEPS})
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  tidal_warnings(fuzz_${name})
  add_dependencies(fuzz fuzz_${name})
  set(seeds "")
  foreach(pattern IN LISTS ARG_SEEDS)
    file(GLOB matched ${PROJECT_SOURCE_DIR}/${pattern})
    if(NOT matched)
      message(FATAL_ERROR "tidal_fuzzer(${name}): no seed matches ${pattern}")
    endif()
    list(APPEND seeds ${matched})
  endforeach()
  set(dict "-")
  if(ARG_DICT)
    set(dict ${CMAKE_CURRENT_SOURCE_DIR}/dict/${ARG_DICT}.dict)
  endif()
  list(JOIN seeds ":" seed_list)
  # name, binary, dictionary, hand-made corpus, extra seed files
  file(APPEND ${TIDAL_FUZZ_MANIFEST}
       "${name}\t${CMAKE_CURRENT_BINARY_DIR}/fuzz_${name}\t${dict}\t${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name}\t${seed_list}\n")
endfunction()
