#include "generations.h"

namespace phx::tpu_sim {
namespace {

constexpr uint64_t kGB = 1000ull * 1000 * 1000;

// Figures from Google Cloud's TPU pages (cloud.google.com/tpu/docs/<generation>) and the
// JAX scaling book (jax-ml/scaling-book, tpus.md), as gathered in
// shared/reference/tpu.md. TensorCores per chip: v4 and v5p have two, v5e and v6e one;
// v7's two is an assumption (Ironwood is built of two dies).
constexpr ChipFigures kGenerations[] = {
    {"v4", 32 * kGB, 1200.0, 275.0, 8, 128, 2,
     "Google Cloud TPU v4 docs; JAX scaling book (8 MXUs = 2 TensorCores x 4)"},
    {"v5e", 16 * kGB, 819.0, 197.0, 4, 128, 1, "Google Cloud TPU v5e docs; JAX scaling book"},
    {"v5p", 95 * kGB, 2765.0, 459.0, 8, 128, 2, "Google Cloud TPU v5p docs; JAX scaling book"},
    {"v6e", 32 * kGB, 1640.0, 918.0, 4, 256, 1,
     "Google Cloud TPU v6e (Trillium) docs; JAX scaling book (4 MXUs of 256x256)"},
    {"v7", 128 * kGB, 7400.0, 2307.0, 8, 256, 2,
     "Google Cloud TPU7x (Ironwood) peak; HBM bandwidth not from Google; MXU count and "
     "size not published: 8 x 256x256 assumed"},
};

}  // namespace

const ChipFigures* find_generation(std::string_view name) {
  for (const ChipFigures& figures : kGenerations)
    if (name == figures.generation) return &figures;
  return nullptr;
}

const char* known_generations() { return "v4, v5e, v5p, v6e, v7"; }

double derived_clock_ghz(const ChipFigures& f) {
  const double macs_per_cycle = double(f.mxu_count) * f.mxu_size * f.mxu_size;
  return f.peak_bf16_tflops * 1e3 / (2.0 * macs_per_cycle);
}

}  // namespace phx::tpu_sim
