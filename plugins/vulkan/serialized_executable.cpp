#include "serialized_executable.h"

#include <cstdio>
#include <cstring>

#include "serial_bytes.h"

namespace phx::vulkan {
namespace {

using plugin_common::ByteReader;
using plugin_common::ByteWriter;

constexpr char kMagic[8] = {'P', 'H', 'X', 'V', 'K', 'E', 'X', '\0'};

template <class T>
uint64_t hash_field(uint64_t hash, const T& value) {
  return plugin_common::fnv1a64({reinterpret_cast<const uint8_t*>(&value), sizeof value}, hash);
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", value);
  return text;
}

std::string device_text(const PipelineCacheIdentity& id) {
  return "vendor " + hex(id.vendor_id) + ", device " + hex(id.device_id);
}

}  // namespace

uint64_t graph_fingerprint(const phx_plugin_graph& graph) {
  uint64_t hash = plugin_common::fnv1a64({});
  hash = hash_field(hash, uint64_t(graph.value_count));
  for (size_t i = 0; i < graph.value_count; ++i) {
    const phx_plugin_value& v = graph.values[i];
    hash = hash_field(hash, uint32_t(v.kind));
    hash = hash_field(hash, v.flags);
    hash = hash_field(hash, uint32_t(v.dtype));
    hash = hash_field(hash, v.rank);
    for (uint32_t d = 0; d < v.rank; ++d) hash = hash_field(hash, v.shape[d]);
  }
  hash = hash_field(hash, uint64_t(graph.node_count));
  for (size_t n = 0; n < graph.node_count; ++n) {
    const phx_plugin_node& node = graph.nodes[n];
    hash = hash_field(hash, uint32_t(node.op));
    hash = hash_field(hash, uint64_t(node.input_count));
    for (size_t i = 0; i < node.input_count; ++i) hash = hash_field(hash, node.inputs[i]);
    hash = hash_field(hash, uint64_t(node.output_count));
    for (size_t i = 0; i < node.output_count; ++i) hash = hash_field(hash, node.outputs[i]);
  }
  return hash;
}

std::vector<uint8_t> write_serialized_executable(const SerializedExecutable& e) {
  ByteWriter w;
  w.bytes.assign(kMagic, kMagic + sizeof kMagic);
  w.put(e.format_version);
  w.put_string(e.plugin_version);
  w.put(e.identity.vendor_id);
  w.put(e.identity.device_id);
  w.put(e.identity.driver_version);
  w.put(e.identity.cache_uuid);
  w.put(e.graph_fingerprint);
  w.put(uint32_t(e.chains.size()));
  for (const auto& chain : e.chains) {
    w.put(uint32_t(chain.size()));
    for (uint64_t node : chain) w.put(node);
  }
  w.put(uint64_t(e.pipeline_cache.size()));
  w.put_bytes(e.pipeline_cache);
  w.put_checksum();
  return std::move(w.bytes);
}

bool read_serialized_executable(std::span<const uint8_t> bytes, SerializedExecutable& out,
                                std::string& error) {
  std::optional<ByteReader> opened =
      plugin_common::open_serialized(bytes, kMagic, "Vulkan executable", error);
  if (!opened) return false;
  ByteReader& r = *opened;
  SerializedExecutable e;
  e.format_version = r.get<uint32_t>();
  if (r.ok() && e.format_version != kSerializedExecutableFormat) {
    out = std::move(e);  // the caller answers INCOMPATIBLE
    return true;
  }
  e.plugin_version = r.get_string();
  e.identity.vendor_id = r.get<uint32_t>();
  e.identity.device_id = r.get<uint32_t>();
  e.identity.driver_version = r.get<uint32_t>();
  const std::span<const uint8_t> uuid = r.get_bytes(VK_UUID_SIZE);
  if (r.ok()) std::memcpy(e.identity.cache_uuid, uuid.data(), VK_UUID_SIZE);
  e.graph_fingerprint = r.get<uint64_t>();
  const auto chain_count = r.get<uint32_t>();
  for (uint32_t c = 0; c < chain_count && r.ok(); ++c) {
    const auto size = r.get<uint32_t>();
    if (size > r.remaining() / sizeof(uint64_t)) break;  // a bad count: fails below
    std::vector<uint64_t>& chain = e.chains.emplace_back(size);
    for (uint64_t& node : chain) node = r.get<uint64_t>();
  }
  const std::span<const uint8_t> cache = r.get_bytes(r.get<uint64_t>());
  e.pipeline_cache.assign(cache.begin(), cache.end());
  if (!r.ok() || r.remaining() != 0 || e.chains.size() != chain_count) {
    error = "malformed: its fields do not fill its bytes";
    return false;
  }
  out = std::move(e);
  return true;
}

bool serialized_matches(const SerializedExecutable& saved, const std::string& plugin_version,
                        const PipelineCacheIdentity& id, uint64_t fingerprint,
                        const std::vector<std::vector<uint64_t>>& chains, std::string& error,
                        bool& damaged) {
  damaged = false;
  const PipelineCacheIdentity& s = saved.identity;
  if (saved.format_version != kSerializedExecutableFormat) {
    error = "serialized in format " + std::to_string(saved.format_version) +
            ", this Vulkan plugin reads format " + std::to_string(kSerializedExecutableFormat);
  } else if (saved.plugin_version != plugin_version) {
    error =
        "serialized by the Vulkan plugin " + saved.plugin_version + ", this is " + plugin_version;
  } else if (s.vendor_id != id.vendor_id || s.device_id != id.device_id) {
    error = "serialized for another device (" + device_text(s) + "), this is " + device_text(id);
  } else if (s.driver_version != id.driver_version) {
    error = "serialized for driver version " + hex(s.driver_version) + ", this driver is " +
            hex(id.driver_version);
  } else if (std::memcmp(s.cache_uuid, id.cache_uuid, VK_UUID_SIZE) != 0) {
    error = "serialized for another pipeline cache UUID (another driver build)";
  } else if (saved.graph_fingerprint != fingerprint) {
    error = "serialized for another graph (other structure, shapes or dtypes)";
  } else if (saved.chains != chains) {
    error = "serialized with another fusion plan than this plugin makes of the graph";
  } else {
    damaged = !driver_header_matches(id, saved.pipeline_cache, error);
    return !damaged;
  }
  return false;
}

}  // namespace phx::vulkan
