// A simulated chip's HBM (plugin_common::MemoryPool): allocations aligned as on the
// device and counted at their aligned size, freed blocks kept for reuse.
#pragma once

#include "memory_pool.h"

namespace phx::tpu_sim {

// Device allocations are aligned to 512 bytes, the HBM access granule of TPUv4i
// (Jouppi et al., ISCA 2021: "512B native access size").
constexpr plugin_common::MemoryPool::Options kHbmOptions = {"HBM",
                                                            "aligned",
                                                            /*alignment=*/512,
                                                            /*size_classes=*/false,
                                                            /*keep_freed=*/true,
                                                            /*max_kept_bytes=*/0,
                                                            /*simulated=*/true};

}  // namespace phx::tpu_sim
