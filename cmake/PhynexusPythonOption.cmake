# PHX_BUILD_PYTHON: the phynexus Python package (python/). ON by default when pybind11, the
# DLPack header (libdlpack-dev) and a Python 3 interpreter with its development files are
# found; the configure output says whether it is built and, when not, why.
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
if(Python3_FOUND)
  # Found after Python3, pybind11 uses that interpreter (its FindPython mode).
  find_package(pybind11 CONFIG QUIET)
endif()
find_package(dlpack CONFIG QUIET)
if(Python3_FOUND AND pybind11_FOUND AND dlpack_FOUND)
  set(phx_python_default ON)
else()
  set(phx_python_default OFF)
endif()
option(PHX_BUILD_PYTHON
       "Build the phynexus Python package (needs pybind11, dlpack and Python 3 headers)"
       ${phx_python_default})

if(PHX_BUILD_PYTHON AND NOT (Python3_FOUND AND pybind11_FOUND AND dlpack_FOUND))
  message(FATAL_ERROR "PHX_BUILD_PYTHON is ON but pybind11, the DLPack header or the Python 3 "
                      "development files were not found (Debian: python3-dev pybind11-dev "
                      "libdlpack-dev)")
endif()

if(PHX_BUILD_PYTHON)
  # Where `cmake --install` puts the package, relative to the prefix: the interpreter's
  # own site-packages folder for that prefix (Debian: lib/python3.X/dist-packages).
  if(NOT PHX_PYTHON_INSTALL_DIR)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c "import site; print(site.getsitepackages(['/P'])[-1][3:])"
      OUTPUT_VARIABLE phx_python_site OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(PHX_PYTHON_INSTALL_DIR ${phx_python_site} CACHE STRING
        "Where the phynexus Python package is installed, relative to the prefix" FORCE)
  endif()
  # For the scripts that run the Python example and bench from a build folder
  # (examples/run_all.sh, bench/run.sh): the interpreter the package was built for.
  set(PHX_PYTHON_EXECUTABLE ${Python3_EXECUTABLE} CACHE INTERNAL "The package's interpreter")
  message(STATUS "Python package: built for ${Python3_EXECUTABLE} (${Python3_VERSION}), "
                 "installed into <prefix>/${PHX_PYTHON_INSTALL_DIR}")
else()
  unset(PHX_PYTHON_EXECUTABLE CACHE)
  if(NOT Python3_FOUND)
    message(STATUS "Python package: not built (no Python 3 interpreter with development files)")
  elseif(NOT pybind11_FOUND)
    message(STATUS "Python package: not built (pybind11 not found)")
  elseif(NOT dlpack_FOUND)
    message(STATUS "Python package: not built (the DLPack header, libdlpack-dev, not found)")
  else()
    message(STATUS "Python package: not built (PHX_BUILD_PYTHON is OFF)")
  endif()
endif()
