# The one Python 3 interpreter the whole build uses: the package's bindings, its tests, and
# the scripts that write ONNX models at build time (examples, tests, bench).
#
# Debian's python3-numpy, python3-pytest and python3-onnx are visible only to the system
# interpreter, while the python3 found first on PATH may be another one (pyenv, a virtual
# environment) without them. So, unless Python3_EXECUTABLE is given, the first of PATH's
# python3 and /usr/bin/python3 that can import numpy, pytest and onnx is chosen; when
# neither can, FindPython's own choice stands and the parts that need those modules say
# at configure time that they are not built.
if(NOT DEFINED Python3_EXECUTABLE)
  find_program(phx_path_python3 NAMES python3 NO_CACHE)
  foreach(candidate IN ITEMS ${phx_path_python3} /usr/bin/python3)
    if(NOT EXISTS ${candidate})
      continue()
    endif()
    execute_process(COMMAND ${candidate} -c "import numpy, pytest, onnx"
                    RESULT_VARIABLE phx_python_modules_missing OUTPUT_QUIET ERROR_QUIET)
    if(NOT phx_python_modules_missing)
      set(Python3_EXECUTABLE ${candidate} CACHE FILEPATH
          "The Python 3 interpreter (chosen for having numpy, pytest and onnx)")
      break()
    endif()
  endforeach()
  if(NOT DEFINED Python3_EXECUTABLE)
    message(STATUS "Python: no interpreter on PATH or at /usr/bin/python3 imports numpy, "
                   "pytest and onnx (Debian: python3-numpy python3-pytest python3-onnx)")
  endif()
endif()
