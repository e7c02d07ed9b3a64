# Run after each test executable is built (tests/CMakeLists.txt): writes set_tests_properties
# lines giving the ctest label `hostile` to the executable's test cases in the doctest suite
# "hostile" (TEST_SUITE("hostile") or doctest::test_suite("hostile")), so that
# `ctest -L hostile` runs the hostile- and unlucky-input cases. One listing per build instead of
# doctest_discover_tests' ADD_LABELS (one process per test case).
# Inputs: -D EXE=<test executable> -D PREFIX=<ctest name prefix> -D OUT=<file to write>
execute_process(COMMAND "${EXE}" --test-suite=hostile --list-test-cases
                OUTPUT_VARIABLE output RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "listing the hostile test cases of ${EXE} failed (${result}): ${output}")
endif()
set(script "")
string(REPLACE "\n" ";" lines "${output}")
foreach(line ${lines})
  if(line STREQUAL "" OR line MATCHES "^=+$" OR line MATCHES [==[^\[doctest\] ]==])
    continue()
  endif()
  string(APPEND script "set_tests_properties([==[${PREFIX}${line}]==] PROPERTIES LABELS hostile)\n")
endforeach()
file(WRITE "${OUT}" "${script}")
