#include "compile_cache.h"

#include <phx/op_params.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace phx::tpu_sim {
namespace {

constexpr double kVectorProgramCompileNs = 1.0e6;  // 1 ms
constexpr double kMxuProgramCompileNs = 5.0e6;     // 5 ms: tiling, weight schedule

void append_tensor(std::string& key, const phx_plugin_tensor& t) {
  if (t.buffer == nullptr) {
    key += "none;";
    return;
  }
  key += std::to_string(static_cast<int>(t.dtype)) + "[";
  for (uint32_t d = 0; d < t.rank; ++d) key += std::to_string(t.shape[d]) + "x";
  key += "];";
}

template <class... Fields>
void append_fields(std::string& key, Fields... fields) {
  ((key += std::to_string(fields) + ","), ...);
}

// The parameters' values, member by member as the op table describes the struct (the
// bits of a float, not a decimal rendering that could merge two close values). Entries a
// shape leaves unused count too: two keys that differ only there cost a compilation.
void append_params(std::string& key, phx_op_id op, const void* params) {
  const OpSchema* schema = find_op_schema(op);
  if (params == nullptr || schema == nullptr) return;
  const auto* bytes = static_cast<const unsigned char*>(params);
  for (const phx_param_field& f : params_description(schema->params).fields) {
    const size_t size = param_type_size(f.type);
    for (size_t i = 0; i < f.count; ++i) {
      uint64_t bits = 0;
      std::memcpy(&bits, bytes + f.offset + i * size, size);
      append_fields(key, bits);
    }
  }
}

}  // namespace

CompileCache::CompileCache(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

CompileCache::Lookup CompileCache::lookup(const std::string& signature) {
  Lookup result;
  if (auto it = index_.find(signature); it != index_.end()) {
    recency_.splice(recency_.begin(), recency_, it->second);
    result.hit = true;
    return result;
  }
  // Inserted before the eviction, so that an allocation that fails changes nothing.
  recency_.push_front(signature);
  try {
    index_.emplace(signature, recency_.begin());
  } catch (...) {
    recency_.pop_front();
    throw;
  }
  if (index_.size() > capacity_) {
    index_.erase(recency_.back());
    recency_.pop_back();
    result.evicted = true;
  }
  return result;
}

std::string op_signature(const phx_plugin_op& op) {
  std::string key = std::to_string(static_cast<int>(op.op)) + ":";
  for (size_t i = 0; i < op.input_count; ++i) append_tensor(key, op.inputs[i]);
  key += "->";
  for (size_t i = 0; i < op.output_count; ++i) append_tensor(key, op.outputs[i]);
  append_params(key, op.op, op.params);
  return key;
}

std::string graph_signature(const phx_plugin_graph& graph) {
  std::string key = "graph:";
  for (size_t i = 0; i < graph.value_count; ++i) {
    const phx_plugin_value& v = graph.values[i];
    append_fields(key, static_cast<int>(v.kind), v.flags, static_cast<int>(v.dtype));
    key += "[";
    for (uint32_t d = 0; d < v.rank; ++d) key += std::to_string(v.shape[d]) + "x";
    key += "];";
  }
  for (size_t n = 0; n < graph.node_count; ++n) {
    const phx_plugin_node& node = graph.nodes[n];
    key += "|" + std::to_string(static_cast<int>(node.op)) + "(";
    for (size_t i = 0; i < node.input_count; ++i)
      key += node.inputs[i] == PHX_PLUGIN_NO_VALUE ? "-," : std::to_string(node.inputs[i]) + ",";
    key += ")->(";
    for (size_t i = 0; i < node.output_count; ++i) key += std::to_string(node.outputs[i]) + ",";
    key += ")";
    append_params(key, node.op, node.params);
  }
  return key;
}

double modelled_compile_time_ns(bool uses_mxu) {
  return uses_mxu ? kMxuProgramCompileNs : kVectorProgramCompileNs;
}

}  // namespace phx::tpu_sim
