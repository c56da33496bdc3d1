// What executable_serialize writes of an executable (plugin.h, "Executables") and
// graph_compile reads back: pipeline cache data of the pipelines the executable uses,
// and its plan (which nodes it fuses), keyed by the plugin's version
// and the device and driver the data is for. Layout (native byte order, no padding;
// serial_bytes.h):
//   char     magic[8]           "PHXVKEX\0"
//   uint32_t format_version     kSerializedExecutableFormat
//   string   plugin_version     the plugin's version ("0.1.0")
//   uint32_t vendor_id, device_id, driver_version
//   uint8_t  cache_uuid[16]     VkPhysicalDeviceProperties::pipelineCacheUUID
//   uint64_t graph_fingerprint  graph_fingerprint() of the compiled graph
//   uint32_t chain_count        then per fused chain: uint32_t node count, uint64_t nodes
//   uint64_t cache_size         then the bytes of vkGetPipelineCacheData (of a cache
//                               holding the executable's pipelines alone)
//   uint64_t checksum           FNV-1a 64 of every byte before it
#pragma once

#include <phynexus/plugin.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pipeline_cache_file.h"

namespace phx::vulkan {

constexpr uint32_t kSerializedExecutableFormat = 1;

struct SerializedExecutable {
  uint32_t format_version = kSerializedExecutableFormat;
  std::string plugin_version;
  PipelineCacheIdentity identity;
  uint64_t graph_fingerprint = 0;
  std::vector<std::vector<uint64_t>> chains;  // the nodes of each fused chain, in order
  std::vector<uint8_t> pipeline_cache;
};

// A hash of what the executable's plan and pipelines depend on: every value's kind,
// flags, dtype and shape, and every node's op and wiring. Names, buffers and parameters
// are no part of it: a loaded executable is built from the graph it is given, parameters
// included, so that a pipeline the data lacks is compiled, never taken wrong.
uint64_t graph_fingerprint(const phx_plugin_graph& graph);

std::vector<uint8_t> write_serialized_executable(const SerializedExecutable& executable);

// Parses bytes into out. False with error for bytes that are no serialized executable, or
// a truncated or damaged one (the checksum, checked before any other field), or one whose
// fields do not fill it: INVALID_ARGUMENT. One of another format version is read as
// far as its version (out.format_version); the caller answers INCOMPATIBLE for it.
bool read_serialized_executable(std::span<const uint8_t> bytes, SerializedExecutable& out,
                                std::string& error);

// Whether saved was made by this plugin version, for this device and driver, and for a
// graph of this fingerprint and plan; false with error saying what differs
// (INCOMPATIBLE). Its pipeline cache data must then carry the device's own driver header,
// else false with error and damaged set (INVALID_ARGUMENT).
bool serialized_matches(const SerializedExecutable& saved, const std::string& plugin_version,
                        const PipelineCacheIdentity& identity, uint64_t fingerprint,
                        const std::vector<std::vector<uint64_t>>& chains, std::string& error,
                        bool& damaged);

}  // namespace phx::vulkan
