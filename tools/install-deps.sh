#!/usr/bin/env bash
# Installs everything Phynexus needs to build, test, fuzz and benchmark on Debian 12, from the
# compiler up, with apt-get only. Idempotent: installs nothing and prints nothing when all
# packages are present. Uses sudo when not run as root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config python3 ccache
  clang-format
  libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  libopenblas-dev
  libvulkan-dev glslang-tools spirv-tools mesa-vulkan-drivers vulkan-validationlayers
  clang libclang-rt-dev llvm abigail-tools
  libonnx-dev libprotobuf-dev libonnx-testdata python3-onnx
  pybind11-dev python3-dev python3-numpy python3-pytest libdlpack-dev
  python3-matplotlib
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
