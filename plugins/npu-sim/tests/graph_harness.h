// The npu-sim plugin driven through its entries, without a host: the shared library
// loaded with dlopen, a host of log and set_error, and graphs made by hand (values,
// ranges, nodes), their values bound to the plugin's own buffers, as the host binds
// them. For the tests of graph_claim, graph_estimate, graph_compile and the executables.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <phynexus/plugin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace npu_sim_test {

// The plugin, initialized with PHX_NPU_SIM = settings.
class PluginUnderTest {
 public:
  explicit PluginUnderTest(const char* settings) {
    setenv("PHX_NPU_SIM", settings, 1);
    unsetenv("PHX_NPU_SIM_CONFIG");
    setenv("XDG_CONFIG_HOME", "/nonexistent/phx-npu-sim-graph-test", 1);
    handle_ = dlopen(PHX_NPU_SIM_PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      ADD_FAILURE() << dlerror();
      return;
    }
    auto entry = reinterpret_cast<phx_plugin_entry_fn>(dlsym(handle_, PHX_PLUGIN_ENTRY_NAME));
    host_ = {sizeof host_, PHX_PLUGIN_ABI_MAJOR, PHX_PLUGIN_ABI_MINOR, this, log, set_error, 1};
    EXPECT_EQ(entry(&host_, &api_), PHX_STATUS_OK);
    EXPECT_EQ(api_->initialize(&host_, &plugin_), PHX_STATUS_OK) << error_;
    EXPECT_EQ(api_->stream_create(plugin_, 0, &stream_), PHX_STATUS_OK);
  }
  ~PluginUnderTest() {
    if (plugin_ != nullptr) {
      for (void* buffer : buffers_) api_->buffer_free(plugin_, buffer);
      api_->stream_destroy(plugin_, stream_);
      api_->shutdown(plugin_);
    }
    if (handle_ != nullptr) dlclose(handle_);
  }
  PluginUnderTest(const PluginUnderTest&) = delete;
  PluginUnderTest& operator=(const PluginUnderTest&) = delete;

  const phx_plugin_api& api() const { return *api_; }
  void* plugin() const { return plugin_; }
  void* stream() const { return stream_; }
  // The message of the last failure the plugin described.
  const std::string& error() const { return error_; }

  // A buffer of the plugin's holding bytes (freed with the plugin).
  void* buffer_with(const void* data, size_t bytes) {
    void* buffer = nullptr;
    EXPECT_EQ(api_->buffer_allocate(plugin_, 0, std::max<size_t>(bytes, 1), &buffer),
              PHX_STATUS_OK);
    buffers_.push_back(buffer);
    if (data != nullptr) api_->buffer_write(plugin_, buffer, 0, data, bytes);
    return buffer;
  }

 private:
  static void log(void*, phx_log_level, const char*) {}
  static void set_error(void* self, const char* message) {
    static_cast<PluginUnderTest*>(self)->error_ = message;
  }

  void* handle_ = nullptr;
  phx_plugin_host host_{};
  const phx_plugin_api* api_ = nullptr;
  void* plugin_ = nullptr;
  void* stream_ = nullptr;
  std::vector<void*> buffers_;
  std::string error_;
};

inline int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

// min, max and rms of values: the range the host measures over calibration samples.
inline phx_plugin_value_range range_of(const std::vector<float>& values) {
  phx_plugin_value_range r{values.at(0), values.at(0), 0};
  double squares = 0;
  for (float v : values) {
    r.min = std::min(r.min, v);
    r.max = std::max(r.max, v);
    squares += double(v) * v;
  }
  r.rms = float(std::sqrt(squares / double(values.size())));
  return r;
}

// A graph made by hand: f32 values unless said otherwise, a range per value, nodes.
class HandGraph {
 public:
  uint32_t add_value(phx_plugin_value_kind kind, std::vector<int64_t> shape,
                     phx_plugin_value_range range = {}, phx_dtype dtype = PHX_DTYPE_F32) {
    phx_plugin_value v{};
    v.struct_size = sizeof v;
    v.kind = kind;
    v.dtype = dtype;
    v.rank = uint32_t(shape.size());
    std::fill(v.shape, v.shape + PHX_MAX_RANK, 1);
    std::copy(shape.begin(), shape.end(), v.shape);
    v.name = names_.emplace_back("v" + std::to_string(values_.size())).c_str();
    values_.push_back(v);
    ranges_.push_back(range);
    return uint32_t(values_.size() - 1);
  }
  // A constant holding data, fixed (PHX_PLUGIN_VALUE_CONTENTS_FIXED) unless said not.
  uint32_t add_constant(PluginUnderTest& plugin, std::vector<int64_t> shape,
                        const std::vector<float>& data, bool fixed = true) {
    const uint32_t v = add_value(PHX_PLUGIN_VALUE_CONSTANT, shape, range_of(data));
    values_[v].flags = fixed ? PHX_PLUGIN_VALUE_CONTENTS_FIXED : 0;
    values_[v].tensor = tensor_of(values_[v], plugin.buffer_with(data.data(), data.size() * 4));
    return v;
  }
  // A node; params must outlive the graph.
  size_t add_node(phx_op_id op, const void* params, std::vector<uint32_t> inputs,
                  std::vector<uint32_t> outputs) {
    std::vector<uint32_t>& wiring = wiring_.emplace_back(inputs);
    wiring.insert(wiring.end(), outputs.begin(), outputs.end());
    phx_plugin_node node{};
    node.struct_size = sizeof node;
    node.op = op;
    node.params = params;
    node.inputs = wiring.data();
    node.input_count = inputs.size();
    node.outputs = wiring.data() + inputs.size();
    node.output_count = outputs.size();
    node.name = names_.emplace_back("n" + std::to_string(nodes_.size())).c_str();
    nodes_.push_back(node);
    return nodes_.size() - 1;
  }
  phx_plugin_value_range& range(uint32_t value) { return ranges_.at(value); }

  // The graph, with the ranges or without (no calibration).
  phx_plugin_graph graph(bool with_ranges = true) const {
    phx_plugin_graph g{};
    g.struct_size = sizeof g;
    g.values = values_.data();
    g.value_count = values_.size();
    g.nodes = nodes_.data();
    g.node_count = nodes_.size();
    g.value_ranges = with_ranges ? ranges_.data() : nullptr;
    return g;
  }

  // One tensor per value for a run: the constants' own, a fresh buffer for the others
  // (inputs holding data[v] where given).
  std::vector<phx_plugin_tensor> bind(PluginUnderTest& plugin,
                                      const std::map<uint32_t, std::vector<float>>& data) const {
    std::vector<phx_plugin_tensor> tensors;
    for (uint32_t v = 0; v < values_.size(); ++v) {
      if (values_[v].kind == PHX_PLUGIN_VALUE_CONSTANT) {
        tensors.push_back(values_[v].tensor);
        continue;
      }
      const size_t bytes = phx_plugin_element_count(values_[v].rank, values_[v].shape) *
                           phx_plugin_dtype_size(values_[v].dtype);
      const auto given = data.find(v);
      tensors.push_back(tensor_of(
          values_[v],
          plugin.buffer_with(given != data.end() ? given->second.data() : nullptr, bytes)));
    }
    return tensors;
  }

 private:
  static phx_plugin_tensor tensor_of(const phx_plugin_value& v, void* buffer) {
    phx_plugin_tensor t{};
    t.struct_size = sizeof t;
    t.buffer = buffer;
    t.dtype = v.dtype;
    t.rank = v.rank;
    std::copy(v.shape, v.shape + PHX_MAX_RANK, t.shape);
    return t;
  }

  std::vector<phx_plugin_value> values_;
  std::vector<phx_plugin_value_range> ranges_;
  std::vector<phx_plugin_node> nodes_;
  std::deque<std::vector<uint32_t>> wiring_;  // deques: the nodes point into them
  std::deque<std::string> names_;
};

// graph_compile's executable, destroyed with this.
class Compiled {
 public:
  Compiled(PluginUnderTest& plugin, const phx_plugin_graph& graph) : plugin_(plugin) {
    status_ = plugin.api().graph_compile(plugin.plugin(), 0, &graph, &executable_);
  }
  ~Compiled() {
    if (status_ == PHX_STATUS_OK) plugin_.api().executable_destroy(plugin_.plugin(), executable_);
  }
  Compiled(const Compiled&) = delete;
  Compiled& operator=(const Compiled&) = delete;

  phx_status status() const { return status_; }

  phx_dtype compute_dtype(size_t node) const {
    phx_plugin_node_report report{};
    report.struct_size = sizeof report;
    EXPECT_EQ(plugin_.api().executable_node_report(plugin_.plugin(), executable_, node, &report),
              PHX_STATUS_OK);
    return report.compute_dtype;
  }

  std::map<std::string, double> stats() const {
    phx_metric metrics[32];
    size_t count = 0;
    EXPECT_EQ(plugin_.api().executable_stats(plugin_.plugin(), executable_, metrics, 32, &count),
              PHX_STATUS_OK);
    std::map<std::string, double> named;
    for (size_t i = 0; i < count && i < 32; ++i) named[metrics[i].name] = metrics[i].value;
    return named;
  }

  phx_status run(const std::vector<phx_plugin_tensor>& values,
                 phx_plugin_profile* const* node_profiles = nullptr) const {
    uint64_t ticket = 0;
    return plugin_.api().executable_run(plugin_.plugin(), plugin_.stream(), executable_,
                                        values.data(), values.size(), node_profiles, &ticket);
  }

  void* get() const { return executable_; }

 private:
  PluginUnderTest& plugin_;
  void* executable_ = nullptr;
  phx_status status_ = PHX_STATUS_INTERNAL;
};

// The f32 elements of a bound tensor.
inline std::vector<float> read_f32(PluginUnderTest& plugin, const phx_plugin_tensor& t) {
  std::vector<float> values(phx_plugin_element_count(t.rank, t.shape));
  plugin.api().buffer_read(plugin.plugin(), t.buffer, t.offset, values.data(), values.size() * 4);
  return values;
}

}  // namespace npu_sim_test
