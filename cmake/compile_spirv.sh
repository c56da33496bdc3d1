#!/usr/bin/env bash
# Compiles one SPIR-V module as phx_vulkan_shader (PhynexusShaders.cmake) describes it:
# glslangValidator, spirv-val, spirv-opt, spirv-val. With a cache folder, a module whose
# inputs were compiled before is copied from it instead: ccache does not cover shaders,
# and every fresh build folder (each CI run builds three) compiled all of them again.
# The key hashes everything the module depends on: the tools' versions, the target
# environment, the defines, spirv-opt's passes, the source and every shared .glsl file
# of the include folder (which a shader may include).
#
# compile_spirv.sh CACHE OUT DEPFILE TOOLS_ID GLSLANG SPIRV_VAL SPIRV_OPT TARGET_ENV
#                  INCLUDE_DIR SOURCE [-DNAME=VALUE ...] -- SPIRV_OPT_PASSES...
# CACHE and DEPFILE may be "-" for none. On a hit the depfile lists the source and the
# include folder's .glsl files.
set -euo pipefail

[ $# -ge 11 ] || { echo "compile_spirv.sh: too few arguments" >&2; exit 2; }
cache=$1 out=$2 depfile=$3 tools_id=$4 glslang=$5 val=$6 opt=$7 env=$8 include_dir=$9
source=${10}
shift 10
defines=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  defines+=("$1")
  shift
done
[ $# -gt 0 ] || { echo "compile_spirv.sh: no -- before the passes" >&2; exit 2; }
shift
passes=("$@")
includes=("$include_dir"/*.glsl)

key=""
if [ "$cache" != "-" ]; then
  key=$({
    printf '%s\n' "$tools_id" "$env" "${defines[@]}" -- "${passes[@]}"
    cat "$source" "${includes[@]}"
  } | sha256sum)
  key=${key%% *}
  if [ -f "$cache/$key.spv" ] && cp "$cache/$key.spv" "$out" 2>/dev/null; then
    [ "$depfile" = "-" ] || printf '%s: %s\n' "$out" "$source ${includes[*]}" >"$depfile"
    exit 0
  fi
fi

depfile_flags=()
[ "$depfile" = "-" ] || depfile_flags=(--depfile "$depfile")
"$glslang" -V --target-env "$env" --quiet "-I$include_dir" "${defines[@]}" \
  "${depfile_flags[@]}" -o "$out" "$source"
"$val" --target-env "$env" "$out"
"$opt" "${passes[@]}" "$out" -o "$out"
"$val" --target-env "$env" "$out"

if [ -n "$key" ]; then
  # Written under a temporary name and renamed: builds running at once never read half
  # a module. A cache that cannot be written costs the next build its hits, nothing more.
  {
    mkdir -p "$cache" && tmp=$(mktemp "$cache/.module.XXXXXX") && cp "$out" "$tmp" &&
      mv "$tmp" "$cache/$key.spv"
  } 2>/dev/null || echo "compile_spirv.sh: cannot write the cache $cache" >&2
fi
