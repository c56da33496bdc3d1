#include "generations.h"

namespace phx::tpu_sim {
namespace {

constexpr uint64_t kGB = 1000ull * 1000 * 1000;

// Figures from Google Cloud's TPU pages (cloud.google.com/tpu/docs/<generation>) and the
// JAX scaling book (jax-ml/scaling-book, tpus.md), as gathered in
// shared/reference/tpu.md. TensorCores per chip: v4 and v5p have two, v5e and v6e one;
// v7's two is an assumption (Ironwood is built of two dies).
// ICI: the one-way bandwidth per link is the scaling book's (tpus.md, "ICI BW/link
// (one-way)"), which agrees with Google's bidirectional bandwidth per chip divided by
// 2 x links; v7's is that division done on a figure not from Google. The latency is the
// scaling book's "typically around 1us" per hop (sharding.md), taken for every
// generation: no generation's own figure is published. ici_source names the bandwidth's.
constexpr ChipFigures kGenerations[] = {
    {"v4", 32 * kGB, 1200.0, 275.0, 8, 128, 2,
     "Google Cloud TPU v4 docs; JAX scaling book (8 MXUs = 2 TensorCores x 4)", 3, 45.0, 1000.0,
     "3D torus, 45 GB/s per link each way: JAX scaling book, tpus.md"},
    {"v5e", 16 * kGB, 819.0, 197.0, 4, 128, 1, "Google Cloud TPU v5e docs; JAX scaling book", 2,
     50.0, 1000.0,
     "2D torus, 50 GB/s per link each way: JAX scaling book, tpus.md; Google's 400 GB/s "
     "bidirectional per chip over 4 links"},
    {"v5p", 95 * kGB, 2765.0, 459.0, 8, 128, 2, "Google Cloud TPU v5p docs; JAX scaling book", 3,
     100.0, 1000.0,
     "3D torus, 100 GB/s per link each way: JAX scaling book, tpus.md; Google's 1200 GB/s "
     "bidirectional per chip over 6 links"},
    {"v6e", 32 * kGB, 1640.0, 918.0, 4, 256, 1,
     "Google Cloud TPU v6e (Trillium) docs; JAX scaling book (4 MXUs of 256x256)", 2, 100.0, 1000.0,
     "2D torus, 100 GB/s per link each way: JAX scaling book, tpus.md"},
    {"v7", 128 * kGB, 7400.0, 2307.0, 8, 256, 2,
     "Google Cloud TPU7x (Ironwood) peak; HBM bandwidth not from Google; MXU count and "
     "size not published: 8 x 256x256 assumed",
     3, 100.0, 1000.0,
     "3D torus; 100 GB/s per link each way assumed: about 1.2 TB/s bidirectional per chip "
     "(not from Google) over 6 links"},
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
