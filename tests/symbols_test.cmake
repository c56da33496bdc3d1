# Checks the dynamic symbols each shared object of Phynexus exports: libphynexus exactly
# the functions its public headers declare PHX_API, each plugin only phx_plugin_entry.
# Run by ctest (tests/CMakeLists.txt):
#   cmake -DNM=<nm> -DLIBRARY=<libphynexus.so> -DHEADERS=<phynexus.h>|<graph.h>...
#         -DPLUGIN_DIRS=<dir>|<dir>... -P symbols_test.cmake
# Every *.so in a plugin folder is checked; the folders together must hold at least one.
# A library of its own declares its functions with a macro of its own, given as
# -DAPI_MACRO=<macro> (libphynexus_mpi: PHX_MPI_API), and is checked alone (PLUGIN_DIRS
# empty).

cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED API_MACRO)
  set(API_MACRO PHX_API)
endif()
foreach(var NM LIBRARY HEADERS PLUGIN_DIRS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "symbols_test: -D${var}=... is required")
  endif()
endforeach()

set(failures 0)

# Sets <out_var> to the names of the symbols <file> defines in its dynamic symbol table.
function(defined_dynamic_symbols file out_var)
  execute_process(COMMAND ${NM} -D --defined-only ${file}
                  OUTPUT_VARIABLE output ERROR_VARIABLE error RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "symbols_test: ${NM} -D --defined-only ${file} failed: ${error}")
  endif()
  string(REPLACE "\n" ";" lines "${output}")
  set(names)
  foreach(line IN LISTS lines)
    # "<address> <type> <name>"; the name may carry a version suffix (name@@VERSION).
    if(line MATCHES "^[0-9a-fA-F]+ [A-Za-z] ([^ @]+)")
      list(APPEND names ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()

# The functions the header declares: "<API_MACRO> <return type> phx_<name>(".
string(REPLACE "|" ";" header_files "${HEADERS}")
set(header "")
foreach(header_file IN LISTS header_files)
  file(READ ${header_file} text)
  string(APPEND header "${text}")
endforeach()
string(REGEX MATCHALL "${API_MACRO}[^;(]*[ *]phx_[a-z0-9_]+\\(" declarations "${header}")
set(declared)
foreach(declaration IN LISTS declarations)
  string(REGEX MATCH "phx_[a-z0-9_]+\\($" name "${declaration}")
  string(REPLACE "(" "" name "${name}")
  list(APPEND declared ${name})
endforeach()
if(NOT declared)
  message(FATAL_ERROR "symbols_test: found no ${API_MACRO} function in the public headers")
endif()

defined_dynamic_symbols(${LIBRARY} library_symbols)
foreach(name IN LISTS library_symbols)
  if(NOT name IN_LIST declared)
    message(SEND_ERROR "${LIBRARY} exports '${name}', which no public header declares")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
foreach(name IN LISTS declared)
  if(NOT name IN_LIST library_symbols)
    message(SEND_ERROR "${LIBRARY} does not export '${name}', which a public header declares")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
list(LENGTH library_symbols exported_count)
message(STATUS "${LIBRARY}: exports the ${exported_count} functions of the header")

string(REPLACE "|" ";" plugin_dirs "${PLUGIN_DIRS}")
set(plugins)
foreach(dir IN LISTS plugin_dirs)
  file(GLOB found LIST_DIRECTORIES false "${dir}/*.so")
  list(APPEND plugins ${found})
endforeach()
if(NOT plugins AND PLUGIN_DIRS)
  message(SEND_ERROR "no plugin found in ${plugin_dirs}")
  math(EXPR failures "${failures} + 1")
endif()
foreach(plugin IN LISTS plugins)
  defined_dynamic_symbols(${plugin} plugin_symbols)
  if(NOT plugin_symbols STREQUAL "phx_plugin_entry")
    message(SEND_ERROR
            "${plugin} exports '${plugin_symbols}'; a plugin exports phx_plugin_entry only")
    math(EXPR failures "${failures} + 1")
  else()
    message(STATUS "${plugin}: phx_plugin_entry only")
  endif()
endforeach()

if(failures GREATER 0)
  message(FATAL_ERROR "symbols_test: ${failures} failure(s)")
endif()
