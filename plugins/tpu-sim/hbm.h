// A simulated chip's HBM (plugin_common::SimulatedMemory): allocations aligned as on the
// device and counted at their aligned size, freed blocks kept for reuse.
#pragma once

#include "simulated_memory.h"

namespace phx::tpu_sim {

// Device allocations are aligned to 512 bytes, the HBM access granule of TPUv4i
// (Jouppi et al., ISCA 2021: "512B native access size").
constexpr plugin_common::SimulatedMemory::Options kHbmOptions = {
    "HBM", "aligned", /*alignment=*/512, /*size_classes=*/false, /*keep_freed=*/true};

}  // namespace phx::tpu_sim
