# phx_gtest_add_tests(<target> [NAME <name>] [SHARDS <n>] [FILTER <gtest filter>]
#                     [COST <seconds>] [LABELS <label>...]
#                     [ENVIRONMENT_MODIFICATION <entry>...])
# Registers a GoogleTest executable with ctest: one entry, <name> (the target's name unless
# given), that runs every test of the executable (or those FILTER selects) in one process;
# or, with SHARDS, <n> entries <name>.shard<i>of<n>, each running every n-th test through
# GoogleTest's own sharding (GTEST_TOTAL_SHARDS, GTEST_SHARD_INDEX), so that a long
# executable keeps both of CI's cores busy.
#
# Not gtest_discover_tests, which makes a process of each test: most tests make a context,
# which loads every plugin (lavapipe under the Khronos validation layer among them), and a
# process cost 0.2 s in the Release build and 1.5 s under AddressSanitizer before its test
# began. That was half of the Release suite's time and nearly all of the asan suite's 13.5
# minutes on 2 cores. A failed entry's output names the tests that failed; run one alone
# with the executable and --gtest_filter.
#
# COST: about the seconds the entry takes under the asan preset. ctest starts the costliest
# entries first; on a fresh tree (no Testing/Temporary/CTestCostData.txt) it has only these
# to go by, and a long entry started last would leave the other core idle.
function(phx_gtest_add_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "NAME;SHARDS;FILTER;COST"
                        "LABELS;ENVIRONMENT_MODIFICATION")
  if(NOT ARG_NAME)
    set(ARG_NAME ${target})
  endif()
  if(NOT ARG_SHARDS)
    set(ARG_SHARDS 1)
  endif()
  set(arguments)
  if(ARG_FILTER)
    set(arguments --gtest_filter=${ARG_FILTER})
  endif()
  math(EXPR last "${ARG_SHARDS} - 1")
  foreach(index RANGE ${last})
    set(name ${ARG_NAME})
    set(environment ${ARG_ENVIRONMENT_MODIFICATION})
    if(ARG_SHARDS GREATER 1)
      math(EXPR number "${index} + 1")
      set(name ${ARG_NAME}.shard${number}of${ARG_SHARDS})
      list(APPEND environment GTEST_TOTAL_SHARDS=set:${ARG_SHARDS}
                              GTEST_SHARD_INDEX=set:${index})
    endif()
    add_test(NAME ${name} COMMAND ${target} ${arguments})
    if(environment)
      set_tests_properties(${name} PROPERTIES ENVIRONMENT_MODIFICATION "${environment}")
    endif()
    if(ARG_LABELS)
      set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
    endif()
    if(ARG_COST)
      set_tests_properties(${name} PROPERTIES COST ${ARG_COST})
    endif()
  endforeach()
endfunction()
