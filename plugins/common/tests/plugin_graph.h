// Graphs built by hand as the host hands them to graph_compile and graph_estimate
// (plugin.h, "Executables"), and the tensors a run binds to their values.
#pragma once

#include <phynexus/plugin.h>

#include <cstring>
#include <deque>
#include <initializer_list>
#include <utility>
#include <vector>

namespace phx_test {

inline phx_plugin_value plugin_value(phx_plugin_value_kind kind, phx_dtype dtype,
                                     std::initializer_list<int64_t> shape, const char* name) {
  phx_plugin_value v{};
  v.struct_size = sizeof v;
  v.kind = kind;
  v.dtype = dtype;
  v.rank = static_cast<uint32_t>(shape.size());
  for (int64_t& d : v.shape) d = 1;
  int i = 0;
  for (int64_t d : shape) v.shape[i++] = d;
  v.name = name;
  return v;
}

// A graph as the host hands it to graph_compile; graph() points into it.
class PluginGraph {
 public:
  uint32_t add(const phx_plugin_value& v) {
    values_.push_back(v);
    return static_cast<uint32_t>(values_.size() - 1);
  }
  void node(phx_op_id op, const void* params, std::vector<uint32_t> inputs, uint32_t output,
            const char* name) {
    wiring_.push_back({std::move(inputs), {output}});
    phx_plugin_node n{};
    n.struct_size = sizeof n;
    n.op = op;
    n.params = params;
    n.inputs = wiring_.back().first.data();
    n.input_count = wiring_.back().first.size();
    n.outputs = wiring_.back().second.data();
    n.output_count = 1;
    n.name = name;
    nodes_.push_back(n);
  }
  phx_plugin_value& value_at(uint32_t i) { return values_[i]; }
  size_t value_count() const { return values_.size(); }
  phx_plugin_graph graph() const {
    phx_plugin_graph graph{};
    graph.struct_size = sizeof graph;
    graph.values = values_.data();
    graph.value_count = values_.size();
    graph.nodes = nodes_.data();
    graph.node_count = nodes_.size();
    return graph;
  }

 private:
  std::vector<phx_plugin_value> values_;
  std::deque<std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> wiring_;  // stable
  std::vector<phx_plugin_node> nodes_;
};

// The tensor of value v in buffer, as a run binds it.
inline phx_plugin_tensor plugin_tensor(const phx_plugin_value& v, void* buffer) {
  phx_plugin_tensor t{};
  t.struct_size = sizeof t;
  t.buffer = buffer;
  t.dtype = v.dtype;
  t.rank = v.rank;
  std::memcpy(t.shape, v.shape, sizeof t.shape);
  return t;
}

}  // namespace phx_test
