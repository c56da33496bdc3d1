# Sourced by the build scripts (run-main.sh, run-tests.sh, run-fuzzers.sh, .ci/run): when
# ccache is installed, every build folder configured from then on compiles through it.
# The cache lives outside the checkout (ccache's default, ~/.cache/ccache, or CCACHE_DIR),
# so it outlasts a fresh clone; paths are hashed relative to the checkout (base_dir), so a
# clone in another folder hits what an earlier one compiled. A folder already configured
# keeps the launcher it was configured with (CMake reads these variables once).
# Compiled SPIR-V modules are cached beside it (cmake/compile_spirv.sh), whether or not
# ccache is installed.
export PHX_SHADER_CACHE=${PHX_SHADER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phynexus-build/spirv}
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  CCACHE_BASEDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  export CCACHE_BASEDIR
  # Four presets of the whole tree (Release, asan, tsan, fuzz) fit with room to spare.
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
fi
