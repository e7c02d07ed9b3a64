# Run after a test executable is built (POST_BUILD, see tests/CMakeLists.txt): gives every doctest
# case of a test suite (TEST_CASE("..." * doctest::test_suite("hostile"))) that suite as a ctest
# label, so `ctest -L hostile` selects them. doctest_discover_tests' ADD_LABELS would run the
# executable once per case; this lists each suite once.
# -D TEST_EXECUTABLE=... -D TEST_PREFIX="area: " -D SUITES="hostile" -D OUT=<file to write>
set(script "")
foreach(suite ${SUITES})
  execute_process(
    COMMAND "${TEST_EXECUTABLE}" "--test-suite=${suite}" --list-test-cases
    OUTPUT_VARIABLE output RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${TEST_EXECUTABLE} --list-test-cases failed (${result}): ${output}")
  endif()
  string(REPLACE "\n" ";" lines "${output}")
  foreach(line ${lines})
    if(line STREQUAL "" OR line MATCHES "^===" OR line MATCHES "^\\[doctest\\] ")
      continue()
    endif()
    string(APPEND script
      "set_tests_properties([==[${TEST_PREFIX}${line}]==] PROPERTIES LABELS [==[${suite}]==])\n")
  endforeach()
endforeach()
file(WRITE "${OUT}" "${script}")
