// What executable_serialize writes of a compiled graph (plugin.h, "Executables") and
// graph_compile reads back to make the executable without compiling again: the model the
// compile cache holds for the graph (its signature and every node's cost), keyed by what
// changes it: the plugin's version and the chip's configuration. Layout (native byte
// order, no padding; every string a uint32_t length and its bytes):
//   char     magic[8]        "PHXTPUM\0"
//   uint32_t format_version  kSerializedModelFormat
//   string   plugin_version  the plugin's version ("0.1.0")
//   string   chip_key        chip_key(): generation, arrays, clock, bandwidth, modes
//   string   signature       graph_signature() of the compiled graph
//   uint64_t node_count
//   node_count costs         OpCost's fields in declaration order
//   uint64_t checksum        FNV-1a 64 of every byte before it
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config.h"
#include "op_cost.h"

namespace phx::tpu_sim {

constexpr uint32_t kSerializedModelFormat = 1;

struct SerializedModel {
  uint32_t format_version = kSerializedModelFormat;
  std::string plugin_version;
  std::string chip_key;
  std::string signature;
  std::vector<OpCost> costs;  // per node of the graph
};

// What of config changes a compiled graph's numerics or its costs, as text that names it
// (for the message of a mismatch): the memory size, the chip count and the cache size
// change neither.
std::string chip_key(const SimConfig& config);

std::vector<uint8_t> write_serialized_model(const SerializedModel& model);

// Parses bytes into out. False with error for bytes that are no serialized model, or a
// truncated or damaged one (the checksum, checked before any other field), or one whose
// fields do not fill it: INVALID_ARGUMENT. A model of
// another format version is read as far as its version (out.format_version); the caller
// answers INCOMPATIBLE for it.
bool read_serialized_model(std::span<const uint8_t> bytes, SerializedModel& out,
                           std::string& error);

// Whether model was made by this plugin version for this chip and for the graph of
// signature; false with error saying what differs (INCOMPATIBLE).
bool model_matches(const SerializedModel& model, const std::string& plugin_version,
                   const std::string& chip_key, const std::string& signature, std::string& error);

}  // namespace phx::tpu_sim
