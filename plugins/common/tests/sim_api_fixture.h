// What the simulator plugins' API tests share: a context whose plugin reads the settings
// the test gives it, that plugin's devices and record, the metrics of its profile
// records, tensors that free themselves, and
// the checks of a rejected configuration.
#pragma once

#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace phx_test {

// How a simulator plugin is named: in device records, in its file, in its variables.
struct SimPluginNames {
  const char* plugin;             // "tpu-sim"
  const char* file;               // "phx_tpu_sim"
  const char* settings_variable;  // "PHX_TPU_SIM"
  const char* config_variable;    // "PHX_TPU_SIM_CONFIG"
};

// A context created after setting the plugin's variables (the plugin reads them then).
class SimContext {
 public:
  // settings: the settings variable's value; config_file: the config variable's, or none.
  SimContext(const SimPluginNames& names, const char* settings, uint32_t flags,
             const char* config_file)
      : names_(names) {
    setenv(names.settings_variable, settings, 1);
    if (config_file != nullptr)
      setenv(names.config_variable, config_file, 1);
    else
      unsetenv(names.config_variable);
    // A developer's own ~/.config/phynexus/<plugin>.conf must not change the tests.
    setenv("XDG_CONFIG_HOME", ("/nonexistent/phx-" + std::string(names.plugin) + "-test").c_str(),
           1);
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.log_level = PHX_LOG_OFF;
    options.flags = flags;
    EXPECT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    phx_device_count(context_, &count);
    for (size_t i = 0; i < count; ++i) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      phx_device_get(context_, i, &info);
      if (std::string(info.plugin) == names.plugin) devices_.push_back(i);
      if (info.type == PHX_DEVICE_CPU && cpu_ == SIZE_MAX) cpu_ = i;
    }
  }
  ~SimContext() { phx_context_destroy(context_); }
  SimContext(const SimContext&) = delete;
  SimContext& operator=(const SimContext&) = delete;

  phx_context context() const { return context_; }
  // The plugin's devices, and the first of them.
  const std::vector<size_t>& devices() const { return devices_; }
  size_t device() const { return devices_.at(0); }
  bool has_cpu() const { return cpu_ != SIZE_MAX; }
  size_t cpu() const { return cpu_; }

  // The plugin's record (state, reason).
  phx_plugin_info plugin() const {
    size_t count = 0;
    phx_plugin_count(context_, &count);
    for (size_t i = 0; i < count; ++i) {
      phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
      phx_plugin_get(context_, i, &info);
      if (std::string(info.path).find(names_.file) != std::string::npos) return info;
    }
    ADD_FAILURE() << "no " << names_.plugin << " plugin file found";
    return PHX_PLUGIN_INFO_INIT;
  }

  std::map<std::string, double> stats(size_t device) const {
    size_t count = 0;
    phx_device_stats(context_, device, nullptr, 0, &count);
    std::vector<phx_metric> metrics(count);
    phx_device_stats(context_, device, metrics.data(), count, &count);
    std::map<std::string, double> named;
    for (const phx_metric& m : metrics) named[m.name] = m.value;
    return named;
  }

  phx_memory_stats memory(size_t device) const {
    phx_memory_stats stats = PHX_MEMORY_STATS_INIT;
    EXPECT_EQ(phx_memory_stats_get(context_, device, &stats), PHX_STATUS_OK);
    return stats;
  }

  bool supports(size_t device, phx_op_id op, phx_dtype dtype) const {
    int yes = -1;
    EXPECT_EQ(phx_device_supports(context_, device, op, dtype, &yes), PHX_STATUS_OK);
    return yes == 1;
  }

 private:
  SimPluginNames names_;
  phx_context context_ = nullptr;
  std::vector<size_t> devices_;
  size_t cpu_ = SIZE_MAX;
};

// The value of a device's property, "" when it has none.
inline std::string property(phx_context ctx, size_t device, const std::string& key) {
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  phx_device_get(ctx, device, &info);
  for (size_t i = 0; i < info.property_count; ++i)
    if (key == info.properties[i].key) return info.properties[i].value;
  return "";
}

// The value of metric name in record index of stream; NaN when absent.
inline double metric(phx_stream stream, size_t index, const char* name) {
  phx_profile_record record = PHX_PROFILE_RECORD_INIT;
  if (phx_profile_get(stream, index, &record) != PHX_STATUS_OK) return NAN;
  for (size_t i = 0; i < record.metric_count; ++i)
    if (std::strcmp(record.metrics[i].name, name) == 0) return record.metrics[i].value;
  return NAN;
}

// A tensor that destroys itself.
class Tensor {
 public:
  Tensor(phx_context ctx, size_t device, phx_dtype dtype, std::vector<int64_t> shape)
      : shape_(std::move(shape)) {
    status_ = phx_tensor_create(ctx, device, dtype, shape_.size(), shape_.data(), &t_);
  }
  ~Tensor() {
    if (t_ != nullptr) phx_tensor_destroy(t_);
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  phx_status status() const { return status_; }
  phx_tensor get() const { return t_; }
  template <class T>
  void upload(const std::vector<T>& v) {
    ASSERT_EQ(phx_tensor_upload(t_, 0, v.data(), v.size() * sizeof(T)), PHX_STATUS_OK)
        << phx_last_error();
  }
  template <class T>
  std::vector<T> download(size_t count) const {
    std::vector<T> v(count);
    EXPECT_EQ(phx_tensor_download(t_, 0, v.data(), count * sizeof(T)), PHX_STATUS_OK);
    return v;
  }

 private:
  std::vector<int64_t> shape_;
  phx_tensor t_ = nullptr;
  phx_status status_ = PHX_STATUS_OK;
};

// A plugin that refused its settings: rejected with a reason that contains named, no
// devices of its own, and the CPU plugin still loaded and computing.
inline void expect_rejected(const SimContext& sim, const std::string& named) {
  const phx_plugin_info info = sim.plugin();
  EXPECT_EQ(info.state, PHX_PLUGIN_REJECTED);
  EXPECT_NE(std::string(info.reason).find(named), std::string::npos) << info.reason;
  EXPECT_TRUE(sim.devices().empty());
  ASSERT_TRUE(sim.has_cpu()) << "the CPU plugin must keep working";
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), sim.cpu(), &stream), PHX_STATUS_OK);
  Tensor x(sim.context(), sim.cpu(), PHX_DTYPE_F32, {4});
  Tensor y(sim.context(), sim.cpu(), PHX_DTYPE_F32, {4});
  x.upload(std::vector<float>{-1, 2, -3, 4});
  const phx_tensor input = x.get(), output = y.get();
  const phx_op_desc relu = {sizeof(phx_op_desc), PHX_OP_RELU, nullptr, &input, 1, &output, 1};
  ASSERT_EQ(phx_op_run(stream, &relu, nullptr), PHX_STATUS_OK);
  EXPECT_EQ(y.download<float>(4), (std::vector<float>{0, 2, 0, 4}));
  phx_stream_destroy(stream);
}

// The plugin's config file: a malformed line rejects the plugin naming the file and line,
// a named file that does not exist rejects it naming the file; a well-formed file (with a
// comment) is read, and the settings variable wins over it. key = value is a setting that
// shows as the device property key; count_key sets how many devices there are.
inline void expect_config_file_read(const SimPluginNames& names, const std::string& key,
                                    const std::string& value, const std::string& count_key) {
  const std::string path = testing::TempDir() + "phx-" + names.plugin + "-test.conf";
  std::ofstream(path) << key << " = " << value << "\n" << count_key << " 2\n";
  expect_rejected(SimContext(names, "", 0, path.c_str()), path + ":2");
  const std::string missing = std::string("/nonexistent/") + names.plugin + ".conf";
  expect_rejected(SimContext(names, "", 0, missing.c_str()), missing);

  std::ofstream(path) << key << " = " << value << "   # a comment\n" << count_key << " = 2\n";
  {
    SimContext sim(names, "", 0, path.c_str());
    ASSERT_EQ(sim.devices().size(), 2u);
    EXPECT_EQ(property(sim.context(), sim.device(), key), value);
  }
  {
    SimContext sim(names, (count_key + "=1").c_str(), 0, path.c_str());
    EXPECT_EQ(sim.devices().size(), 1u);
  }
  unsetenv(names.config_variable);
  std::remove(path.c_str());
}

}  // namespace phx_test
