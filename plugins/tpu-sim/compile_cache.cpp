#include "compile_cache.h"

#include <algorithm>
#include <bit>
#include <cstdint>

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

void append_params(std::string& key, phx_op_id op, const void* params, uint32_t rank) {
  if (params == nullptr) return;
  switch (op) {
    case PHX_OP_MATMUL: {
      const auto& p = *static_cast<const phx_matmul_params*>(params);
      append_fields(key, p.transpose_a, p.transpose_b, static_cast<int>(p.activation));
      break;
    }
    case PHX_OP_SOFTMAX:
    case PHX_OP_LOG_SOFTMAX:
      append_fields(key, static_cast<const phx_softmax_params*>(params)->axis);
      break;
    case PHX_OP_LAYER_NORM:
    case PHX_OP_RMS_NORM:
    case PHX_OP_BATCH_NORM:
    case PHX_OP_INSTANCE_NORM:
      // the bits, not a decimal rendering that could merge two close values
      append_fields(key,
                    std::bit_cast<uint32_t>(static_cast<const phx_norm_params*>(params)->epsilon));
      break;
    case PHX_OP_TRANSPOSE: {
      const auto& p = *static_cast<const phx_transpose_params*>(params);
      for (uint32_t d = 0; d < rank; ++d) append_fields(key, p.perm[d]);
      break;
    }
    case PHX_OP_REDUCE_SUM:
    case PHX_OP_REDUCE_MAX:
    case PHX_OP_REDUCE_MEAN:
    case PHX_OP_REDUCE_MIN:
    case PHX_OP_REDUCE_PROD: {
      const auto& p = *static_cast<const phx_reduce_params*>(params);
      append_fields(key, p.axes_mask, p.keep_dims);
      break;
    }
    case PHX_OP_ATTENTION: {
      const auto& p = *static_cast<const phx_attention_params*>(params);
      append_fields(key, std::bit_cast<uint32_t>(p.scale), static_cast<int>(p.mask), p.window);
      break;
    }
    case PHX_OP_ROPE:
      append_fields(key, static_cast<const phx_rope_params*>(params)->interleaved);
      break;
    case PHX_OP_CONV2D: {
      const auto& p = *static_cast<const phx_conv2d_params*>(params);
      append_fields(key, static_cast<int>(p.layout), p.stride[0], p.stride[1], p.padding[0],
                    p.padding[1], p.padding[2], p.padding[3], p.dilation[0], p.dilation[1],
                    p.groups, static_cast<int>(p.activation));
      break;
    }
    case PHX_OP_LEAKY_RELU:
    case PHX_OP_ELU:
    case PHX_OP_SELU:
    case PHX_OP_CLIP: {
      const auto& p = *static_cast<const phx_elementwise_params*>(params);
      append_fields(key, std::bit_cast<uint32_t>(p.alpha), std::bit_cast<uint32_t>(p.beta));
      break;
    }
    case PHX_OP_ARGMAX: {
      const auto& p = *static_cast<const phx_argmax_params*>(params);
      append_fields(key, p.axis, p.keep_dims, p.select_last_index);
      break;
    }
    case PHX_OP_RESHAPE:
    case PHX_OP_EXPAND: {
      const auto& p = *static_cast<const phx_reshape_params*>(params);
      append_fields(key, p.rank);
      for (uint32_t d = 0; d < p.rank && d < PHX_MAX_RANK; ++d) append_fields(key, p.shape[d]);
      break;
    }
    case PHX_OP_CONCAT:
    case PHX_OP_GATHER:
      append_fields(key, static_cast<const phx_axis_params*>(params)->axis);
      break;
    case PHX_OP_SLICE: {
      const auto& p = *static_cast<const phx_slice_params*>(params);
      for (uint32_t d = 0; d < rank; ++d) append_fields(key, p.starts[d], p.ends[d], p.steps[d]);
      break;
    }
    case PHX_OP_TILE: {
      const auto& p = *static_cast<const phx_tile_params*>(params);
      for (uint32_t d = 0; d < rank; ++d) append_fields(key, p.repeats[d]);
      break;
    }
    case PHX_OP_PAD: {
      const auto& p = *static_cast<const phx_pad_params*>(params);
      append_fields(key, static_cast<int>(p.mode), std::bit_cast<uint32_t>(p.value));
      for (uint32_t d = 0; d < rank; ++d) append_fields(key, p.begin[d], p.end[d]);
      break;
    }
    case PHX_OP_MAX_POOL:
    case PHX_OP_AVG_POOL: {
      // Every entry, those past the spatial dimensions too: they are ignored, so two keys
      // that differ there only cost a compilation.
      const auto& p = *static_cast<const phx_pool_params*>(params);
      for (int d = 0; d < 3; ++d)
        append_fields(key, p.kernel[d], p.stride[d], p.pad_begin[d], p.pad_end[d], p.dilation[d]);
      append_fields(key, p.ceil_mode, p.count_include_pad);
      break;
    }
    case PHX_OP_CONV_TRANSPOSE2D: {
      const auto& p = *static_cast<const phx_conv_transpose2d_params*>(params);
      append_fields(key, p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.padding[2],
                    p.padding[3], p.output_padding[0], p.output_padding[1], p.dilation[0],
                    p.dilation[1], p.groups);
      break;
    }
    case PHX_OP_RESIZE: {
      const auto& p = *static_cast<const phx_resize_params*>(params);
      append_fields(key, static_cast<int>(p.mode), static_cast<int>(p.coordinates),
                    static_cast<int>(p.nearest), p.rank);
      for (uint32_t d = 0; d < p.rank && d < PHX_MAX_RANK; ++d)
        append_fields(key, p.shape[d], std::bit_cast<uint32_t>(p.scales[d]));
      break;
    }
    default:
      break;
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
  append_params(key, op.op, op.params, op.input_count > 0 ? op.inputs[0].rank : 0);
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
    const bool has_first = node.input_count > 0 && node.inputs[0] != PHX_PLUGIN_NO_VALUE;
    append_params(key, node.op, node.params, has_first ? graph.values[node.inputs[0]].rank : 0);
  }
  return key;
}

double modelled_compile_time_ns(bool uses_mxu) {
  return uses_mxu ? kMxuProgramCompileNs : kVectorProgramCompileNs;
}

}  // namespace phx::tpu_sim
