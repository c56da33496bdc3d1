// phynexus._phynexus.Context: a context, its plugins, devices, memory and the op table.
#include <atomic>
#include <cstdio>

#include "binding.h"

namespace phx_python {
namespace {

// phynexus.set_log_level: messages below it are dropped by the log callback of every
// context, whenever it is called; the level a context was created with is the floor.
std::atomic<int> log_threshold{PHX_LOG_WARN};

// Called by the library from any of its threads; writes to standard error as the
// library's own default sink does, and never touches Python.
void log_to_stderr(void*, phx_log_level level, const char* message) {
  static const char* const kNames[] = {"trace", "debug", "info", "warn", "error", "off"};
  if (static_cast<int>(level) < log_threshold.load(std::memory_order_relaxed)) return;
  const char* name = level <= PHX_LOG_OFF ? kNames[level] : "?";
  std::fprintf(stderr, "[phynexus] [%s] %s\n", name, message);
}

ContextPtr create_context(const std::vector<std::string>& plugin_paths,
                          bool use_default_search_path, uint32_t flags, uint32_t num_threads) {
  std::vector<const char*> paths;
  for (const std::string& path : plugin_paths) paths.push_back(path.c_str());
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.plugin_paths = paths.empty() ? nullptr : paths.data();
  options.plugin_path_count = paths.size();
  options.use_default_search_path = use_default_search_path ? 1 : 0;
  options.log_level = static_cast<phx_log_level>(log_threshold.load());
  options.log_callback = log_to_stderr;
  options.flags = flags;
  options.num_threads = num_threads;
  phx_context context = nullptr;
  phx_status status;
  {
    py::gil_scoped_release release;
    status = phx_context_create(&options, &context);
  }
  check(status);
  auto state = std::make_shared<ContextState>();
  state->context = context;
  return state;
}

py::list properties_of(const phx_device_info& info) {
  py::list properties;
  for (size_t i = 0; i < info.property_count; ++i)
    properties.append(py::make_tuple(info.properties[i].key, info.properties[i].value));
  return properties;
}

py::dict device_info(const ContextState& context, size_t device) {
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  check(phx_device_get(context.context, device, &info));
  py::dict out;
  out["index"] = info.index;
  out["plugin"] = info.plugin;
  out["type"] = phx_device_type_name(info.type);
  out["name"] = info.name;
  out["vendor"] = info.vendor;
  out["memory_total_bytes"] = info.memory_total_bytes;
  out["memory_available_bytes"] = info.memory_available_bytes;
  out["compute_units"] = info.compute_units;
  out["dtype_mask"] = info.dtype_mask;
  out["properties"] = properties_of(info);
  out["compiles_graphs"] = info.compiles_graphs != 0;
  return out;
}

py::list plugins(const ContextState& context) {
  size_t count = 0;
  check(phx_plugin_count(context.context, &count));
  py::list out;
  for (size_t i = 0; i < count; ++i) {
    phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
    check(phx_plugin_get(context.context, i, &info));
    py::dict plugin;
    plugin["name"] = info.name;
    plugin["version"] = info.version;
    plugin["path"] = info.path;
    plugin["abi"] = py::make_tuple(info.abi_major, info.abi_minor);
    plugin["state"] = phx_plugin_state_name(info.state);
    plugin["stage"] = phx_plugin_stage_name(info.stage);
    plugin["reason"] = info.reason;
    plugin["device_count"] = info.device_count;
    out.append(plugin);
  }
  return out;
}

py::dict memory_stats(const ContextState& context, size_t device) {
  phx_memory_stats stats = PHX_MEMORY_STATS_INIT;
  check(phx_memory_stats_get(context.context, device, &stats));
  py::dict out;
  out["bytes_in_use"] = stats.bytes_in_use;
  out["peak_bytes_in_use"] = stats.peak_bytes_in_use;
  out["bytes_cached"] = stats.bytes_cached;
  out["limit_bytes"] = stats.limit_bytes;
  out["allocation_count"] = stats.allocation_count;
  return out;
}

py::dict device_stats(const ContextState& context, size_t device) {
  size_t count = 0;
  check(phx_device_stats(context.context, device, nullptr, 0, &count));
  std::vector<phx_metric> metrics(count);
  check(phx_device_stats(context.context, device, metrics.data(), metrics.size(), &count));
  py::dict out;
  for (size_t i = 0; i < count && i < metrics.size(); ++i) out[metrics[i].name] = metrics[i].value;
  return out;
}

py::list name_list(const char* const* names, size_t count) {
  py::list out;
  for (size_t i = 0; i < count; ++i) out.append(names[i]);
  return out;
}

const char* param_type_name(phx_param_type type) {
  switch (type) {
    case PHX_PARAM_INT32:
      return "int32";
    case PHX_PARAM_UINT32:
      return "uint32";
    case PHX_PARAM_INT64:
      return "int64";
    case PHX_PARAM_FLOAT32:
      return "float32";
    case PHX_PARAM_BOOL:
      return "bool";
    case PHX_PARAM_ENUM:
      return "enum";
    case PHX_PARAM_AXES:
      return "axes";
    case PHX_PARAM_DIMENSION:
      return "dimension";
    case PHX_PARAM_LENGTH:
      return "length";
  }
  return "unknown";
}

// Every op of the library's op table, as phx_op_info_get describes it, its parameter
// struct's members by name, their types as param_type_name spells them.
py::list op_table() {
  py::list out;
  for (uint32_t op = 1;; ++op) {
    phx_op_info info = PHX_OP_INFO_INIT;
    if (phx_op_info_get(static_cast<phx_op_id>(op), &info) != PHX_STATUS_OK) break;
    py::dict entry;
    entry["id"] = op;
    entry["name"] = info.name;
    entry["summary"] = info.summary;
    entry["params_struct"] = info.params_struct;
    entry["inputs"] = name_list(info.input_names, info.input_count);
    entry["min_inputs"] = info.min_input_count;
    entry["optional_inputs"] = info.optional_inputs;
    entry["outputs"] = name_list(info.output_names, info.output_count);
    entry["dtype_mask"] = info.dtype_mask;
    entry["params_size"] = info.params_size;
    py::list fields;
    for (size_t f = 0; f < info.param_field_count; ++f) {
      const phx_param_field& field = info.param_fields[f];
      py::dict described;
      described["name"] = field.name;
      described["type"] = param_type_name(field.type);
      described["offset"] = field.offset;
      described["count"] = field.count;
      described["enum_names"] = name_list(field.enum_names, field.enum_count);
      fields.append(described);
    }
    entry["param_fields"] = fields;
    entry["default_params"] =
        info.default_params == nullptr
            ? py::object(py::none())
            : py::object(
                  py::bytes(static_cast<const char*>(info.default_params), info.params_size));
    out.append(entry);
  }
  return out;
}

bool supports_op(const ContextState& context, size_t device, uint32_t op, py::object params,
                 const std::vector<int>& input_dtypes, const std::vector<int>& output_dtypes) {
  std::vector<uint64_t> aligned = params_from_bytes(params);
  std::vector<phx_dtype> inputs, outputs;
  for (int dtype : input_dtypes) inputs.push_back(static_cast<phx_dtype>(dtype));
  for (int dtype : output_dtypes) outputs.push_back(static_cast<phx_dtype>(dtype));
  phx_op_variant variant = {sizeof(phx_op_variant),
                            static_cast<phx_op_id>(op),
                            aligned.empty() ? nullptr : aligned.data(),
                            inputs.data(),
                            inputs.size(),
                            outputs.data(),
                            outputs.size()};
  int supported = 0;
  check(phx_device_supports_op(context.context, device, &variant, &supported));
  return supported != 0;
}

}  // namespace

ContextState::~ContextState() { close(); }

void ContextState::close() {
  std::lock_guard<std::mutex> closing_lock(closing);
  phx_context destroyed = context.exchange(nullptr);
  if (destroyed == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    default_streams.clear();
  }
  // Destroys every object still alive in it; their Python wrappers then get
  // INVALID_ARGUMENT from the library, which detects destroyed handles.
  phx_context_destroy(destroyed);
}

void bind_context(py::module_& module) {
  module.def("api_version", &phx_api_version);
  module.def("status_name",
             [](int status) { return phx_status_name(static_cast<phx_status>(status)); });
  module.def("dtype_name", [](int dtype) { return phx_dtype_name(static_cast<phx_dtype>(dtype)); });
  module.def("dtype_size", [](int dtype) { return phx_dtype_size(static_cast<phx_dtype>(dtype)); });
  module.def("op_table", &op_table);
  module.def("set_log_threshold", [](int level) { log_threshold.store(level); });
  module.def("log_threshold", [] { return log_threshold.load(); });

  py::class_<ContextState, ContextPtr>(module, "Context")
      .def(py::init(&create_context), py::arg("plugin_paths") = std::vector<std::string>{},
           py::arg("use_default_search_path") = true, py::arg("flags") = 0,
           py::arg("num_threads") = 0)
      .def("close",
           [](ContextState& self) {
             refuse_while_viewed(self.host_views, "Context.close");
             py::gil_scoped_release release;
             self.close();
           })
      .def_property_readonly("closed",
                             [](const ContextState& self) { return self.context == nullptr; })
      .def("device_count",
           [](const ContextState& self) {
             size_t count = 0;
             check(phx_device_count(self.context, &count));
             return count;
           })
      .def("device_info", &device_info)
      .def("plugins", &plugins)
      .def("memory_stats", &memory_stats)
      .def("device_stats", &device_stats)
      .def("set_memory_limit",
           [](const ContextState& self, size_t device, uint64_t limit) {
             check(phx_memory_set_limit(self.context, device, limit));
           })
      .def("release_cached",
           [](const ContextState& self, size_t device) {
             check(phx_memory_release_cached(self.context, device));
           })
      .def("supports_op", &supports_op)
      .def("trace_begin",
           [](const ContextState& self, const std::string& path) {
             check(phx_trace_begin(self.context, path.c_str()));
           })
      .def("trace_end",
           [](const ContextState& self) {
             // Waits for the queued work of every stream: other Python threads go on.
             phx_status status;
             {
               py::gil_scoped_release release;
               status = phx_trace_end(self.context);
             }
             check(status);
           })
      .def("supports", [](const ContextState& self, size_t device, uint32_t op, int dtype) {
        int supported = 0;
        check(phx_device_supports(self.context, device, static_cast<phx_op_id>(op),
                                  static_cast<phx_dtype>(dtype), &supported));
        return supported != 0;
      });
}

}  // namespace phx_python
