#include "context.h"

#include <phx/abi_structs.h>
#include <phx/env.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>

#include "calibrator_object.h"
#include "errors.h"
#include "logging.h"
#include "op_rules.h"
#include "plugin_loader.h"

namespace phx {

ContextTable& context_table() {
  static ContextTable table;
  return table;
}
TensorTable& tensor_table() {
  static TensorTable table;
  return table;
}
StreamTable& stream_table() {
  static StreamTable table;
  return table;
}
CalibratorTable& calibrator_table() {
  static CalibratorTable table;
  return table;
}

namespace {

// The contexts retained by the C API calls running on this thread, innermost call last
// (CallScope). A call retains each context once, and one call names at most an op's
// stream and tensors, so a fixed array is enough.
struct ThreadRetains {
  std::array<Context*, 1 + PHX_MAX_OP_INPUTS + PHX_MAX_OP_OUTPUTS> contexts{};
  size_t count = 0;
  Context** begin() { return contexts.data(); }
  Context** end() { return contexts.data() + count; }
};
thread_local ThreadRetains thread_retains;

// Where destroy_context sleeps until the calls it waits for are released. Process-wide
// rather than in the context: the last release must wake the destroyer without
// touching the context, which may be freed as soon as its count drops.
std::mutex destruction_mutex;
std::condition_variable call_released;

Context& owning_context(Context& context) { return context; }
Context& owning_context(const Tensor& tensor) { return *tensor.context; }
Context& owning_context(const Stream& stream) { return *stream.context; }
Context& owning_context(const CalibratorObject& calibrator) { return *calibrator.context; }

template <typename Table, typename Handle>
auto& find_or_fail(Table& table, Handle handle, const char* what) {
  if (handle == nullptr) fail(PHX_STATUS_INVALID_ARGUMENT, std::string(what) + " is null");
  // Under the table's lock the object, hence its context, cannot be freed.
  auto* object = table.find(reinterpret_cast<uintptr_t>(handle),
                            [](auto& found) { owning_context(found).retain_for_call(); });
  if (object == nullptr)
    fail(PHX_STATUS_INVALID_ARGUMENT, std::string(what) + " is not a live handle (destroyed?)");
  return *object;
}
}  // namespace

Context& lookup(phx_context handle) { return find_or_fail(context_table(), handle, "context"); }
Tensor& lookup(phx_tensor handle) { return find_or_fail(tensor_table(), handle, "tensor"); }
Stream& lookup(phx_stream handle) { return find_or_fail(stream_table(), handle, "stream"); }
CalibratorObject& lookup(phx_calibrator handle) {
  return find_or_fail(calibrator_table(), handle, "calibrator");
}

CallScope::CallScope() noexcept : outer_retains_(thread_retains.count) {}

CallScope::~CallScope() {
  ThreadRetains& retains = thread_retains;
  while (retains.count > outer_retains_) retains.contexts[--retains.count]->release_call();
}

void Context::retain_for_call() {
  ThreadRetains& retains = thread_retains;
  // Already counted: the call that got in before destruction began runs to its end.
  if (std::find(retains.begin(), retains.end(), this) != retains.end()) return;
  if (retains.count == retains.contexts.size())
    fail(PHX_STATUS_INTERNAL, "one call looked up more contexts than any function names");
  if ((call_state_.fetch_add(1) & kDestroying) != 0) {
    release_call();
    fail(PHX_STATUS_INVALID_ARGUMENT, "the context is being destroyed");
  }
  retains.contexts[retains.count++] = this;
}

void Context::release_call() noexcept {
  if ((call_state_.fetch_sub(1) & kDestroying) == 0) return;
  // Taking the mutex orders this release before the destroyer's next look at the count
  // or its going to sleep, so the notification cannot be lost.
  { std::lock_guard lock(destruction_mutex); }
  call_released.notify_all();
}

void destroy_context(Context& context) {
  if ((context.call_state_.fetch_or(Context::kDestroying) & Context::kDestroying) != 0)
    fail(PHX_STATUS_INVALID_ARGUMENT, "the context is being destroyed by another call");
  context_table().remove(context.handle);
  ThreadRetains& retains = thread_retains;
  Context** own = std::find(retains.begin(), retains.end(), &context);
  const uint32_t own_retains = own != retains.end() ? 1 : 0;
  {
    std::unique_lock lock(destruction_mutex);
    call_released.wait(
        lock, [&] { return (context.call_state_.load() & ~Context::kDestroying) == own_retains; });
  }
  // The calling call's retain ends with the context rather than when the call returns.
  if (own != retains.end()) {
    std::copy(own + 1, retains.end(), own);
    --retains.count;
  }
  delete &context;
}

phx_plugin_tensor Tensor::plugin_view() const {
  phx_plugin_tensor view{};
  view.struct_size = sizeof view;
  view.buffer = buffer;
  view.offset = offset;
  view.dtype = dtype;
  view.rank = rank;
  std::copy(shape, shape + PHX_MAX_RANK, view.shape);
  return view;
}

void Device::wait_for_streams() {
  std::lock_guard lock(streams_mutex);
  // Every stream, even after one failed: the caller frees or overwrites what they use.
  std::exception_ptr first_error;
  for (Stream* stream : streams) {
    try {
      stream->wait(UINT64_MAX);
    } catch (...) {
      if (first_error == nullptr) first_error = std::current_exception();
    }
  }
  if (first_error != nullptr) std::rethrow_exception(first_error);
}

// The trace writes an op's signature from its operands' shapes with the op rules' text.
Context::Context(const phx_context_options& options) : tracer(append_signature) {
  phx_log_level level = parse_log_level(env_value("PHX_LOG_LEVEL"), options.log_level);
  if (env_is_one("PHX_LOADER_DEBUG")) level = std::min(level, PHX_LOG_DEBUG);
  logger = make_logger(level, options.log_callback, options.log_user_data);
  profiling = (options.flags & PHX_CONTEXT_PROFILE) != 0 || env_is_one("PHX_PROFILE");

  LoaderOptions loader;
  for (size_t i = 0; i < options.plugin_path_count; ++i)
    loader.explicit_paths.emplace_back(options.plugin_paths[i]);
  loader.use_default_search_path = options.use_default_search_path != 0;
  loader.num_threads = options.num_threads;
  if (const char* threads = env_value("PHX_NUM_THREADS"))
    loader.num_threads = static_cast<uint32_t>(std::strtoul(threads, nullptr, 10));
  loader.logger = logger;
  plugins = PluginLoader::load_all(loader);
  for (auto& plugin : plugins)
    if (plugin->loaded()) add_devices(*plugin);

  const char* fallback = env_value("PHX_FALLBACK");
  if ((options.flags & PHX_CONTEXT_FALLBACK_CPU) != 0 ||
      (fallback != nullptr && std::strcmp(fallback, "cpu") == 0)) {
    // The CPU plugin's device, which implements every op; another CPU device otherwise.
    for (auto& device : devices) {
      if (device->type != PHX_DEVICE_CPU) continue;
      if (fallback_device == nullptr || device->plugin->name == "cpu")
        fallback_device = device.get();
      if (device->plugin->name == "cpu") break;
    }
    if (fallback_device == nullptr) logger->warn("CPU fallback asked for, but no CPU device");
  }

  if (const char* path = env_value("PHX_TRACE"); path != nullptr && path[0] != '\0') {
    try {
      begin_trace(path);
    } catch (const Error& e) {
      logger->warn("PHX_TRACE: no trace is written: {}", e.what());
    }
  }
}

void Context::add_devices(Plugin& plugin) {
  std::vector<std::unique_ptr<Device>> found;
  try {
    for (uint32_t local = 0; local < plugin.device_count; ++local) {
      auto device = std::make_unique<Device>();
      device->plugin = &plugin;
      device->local_index = local;
      device->index = static_cast<uint32_t>(devices.size() + found.size());
      phx_plugin_device_info info{};
      info.struct_size = sizeof info;
      plugin.call("device_info", device->index,
                  [&] { return plugin.api().device_info(plugin.instance(), local, &info); });
      auto text = [](const char* s) { return std::string(s != nullptr ? s : ""); };
      device->type = plugin.device_type(enum_value(info.type), device->index);
      device->name = text(info.name);
      device->vendor = text(info.vendor);
      device->memory_total_bytes = info.memory_total_bytes;
      device->memory_available_bytes = info.memory_available_bytes;
      device->compute_units = info.compute_units;
      device->dtype_mask = info.dtype_mask & ((1u << PHX_DTYPE_COUNT) - 2u);
      for (size_t p = 0; info.properties != nullptr && p < info.property_count; ++p) {
        const char* key = device->property_text.emplace_back(text(info.properties[p].key)).c_str();
        const char* value =
            device->property_text.emplace_back(text(info.properties[p].value)).c_str();
        device->properties.push_back({key, value});
      }
      // A plugin of ABI 1.0 predates the ops of 1.1: it is never asked about them.
      const int op_end = plugin.abi_minor >= 1 ? PHX_OP_COUNT : PHX_OP_CONV2D + 1;
      for (int op = 1; op < op_end; ++op) {
        for (int dtype = 1; dtype < PHX_DTYPE_COUNT; ++dtype) {
          int yes = 0;
          plugin.call("op_supported", device->index, [&] {
            return plugin.api().op_supported(plugin.instance(), local, static_cast<phx_op_id>(op),
                                             static_cast<phx_dtype>(dtype), &yes);
          });
          device->supported[op][dtype] = yes != 0;
        }
      }
      found.push_back(std::move(device));
    }
  } catch (const Error& e) {
    // A plugin that cannot describe its devices offers none; the others carry on.
    logger->warn("plugin '{}' offers no device: {}", plugin.name, e.what());
    plugin.state = PHX_PLUGIN_REJECTED;
    plugin.reason = std::string("listing its devices failed: ") + e.what();
    return;
  }
  for (auto& device : found) devices.push_back(std::move(device));
}

Context::~Context() {
  // The objects of the layers above first (they use streams and tensors), then streams
  // (they finish their work), then tensors, then the plugins.
  for (ContextObject* object : std::vector<ContextObject*>(objects_.begin(), objects_.end()))
    destroy_object(*object);
  for (Stream* stream : std::vector<Stream*>(streams_.begin(), streams_.end())) {
    try {
      destroy_stream(*stream);
    } catch (const Error& e) {
      logger->error("destroying a stream: {}", e.what());
    }
  }
  // Releases of consumer memory come last: a release may call the library (drop the
  // last reference to another tensor), which must not find this context half freed.
  std::vector<std::pair<phx_host_release_fn, void*>> releases;
  for (Tensor* tensor : std::vector<Tensor*>(tensors_.begin(), tensors_.end()))
    releases.push_back(free_tensor(*tensor));
  for (CalibratorObject* calibrator :
       std::vector<CalibratorObject*>(calibrators_.begin(), calibrators_.end()))
    destroy_calibrator(*calibrator);
  devices.clear();
  plugins.clear();
  for (auto [release, user_data] : releases)
    if (release != nullptr) release(user_data);
}

Device& Context::device(size_t index) {
  if (index >= devices.size())
    fail(PHX_STATUS_NOT_FOUND, "no device " + std::to_string(index) + " (the context has " +
                                   std::to_string(devices.size()) + ")");
  return *devices[index];
}

void Context::begin_trace(const std::string& path) {
  std::vector<std::string> names;
  names.reserve(devices.size());
  for (const auto& device : devices)
    names.push_back(device->name + " (" + device->plugin->name + ")");
  tracer.begin(path, names);
}

Tensor& Context::create_tensor(Device& device, phx_dtype dtype, size_t rank, const int64_t* shape,
                               const HostMemory* host) {
  auto tensor = std::make_unique<Tensor>();
  tensor->context = this;
  tensor->device = &device;
  tensor->dtype = dtype;
  tensor->rank = static_cast<uint32_t>(rank);
  uint64_t elements = 1;
  for (size_t i = 0; i < PHX_MAX_RANK; ++i) {
    int64_t dim = i < rank ? shape[i] : 1;
    tensor->shape[i] = dim;
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dim), &elements))
      fail(PHX_STATUS_INVALID_ARGUMENT, "the element count overflows 64 bits");
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(phx_dtype_size(dtype)), &bytes) ||
      bytes > (UINT64_C(1) << 62))
    fail(PHX_STATUS_INVALID_ARGUMENT, "the byte size overflows");
  tensor->element_count = elements;
  tensor->byte_size = bytes;
  auto& plugin = *device.plugin;
  const char* entry = host != nullptr ? "buffer_import_host" : "buffer_allocate";
  if (host != nullptr) {
    if (plugin.api().buffer_import_host == nullptr)
      fail(PHX_STATUS_UNSUPPORTED, "device " + std::to_string(device.index) + " (" + device.name +
                                       ") cannot compute on host memory; copy the data instead");
    plugin.call(entry, device.index, [&] {
      return plugin.api().buffer_import_host(plugin.instance(), device.local_index, host->data,
                                             bytes, &tensor->buffer);
    });
  } else {
    plugin.call(entry, device.index, [&] {
      return plugin.api().buffer_allocate(plugin.instance(), device.local_index, bytes,
                                          &tensor->buffer);
    });
  }
  if (tensor->buffer == nullptr)
    fail(PHX_STATUS_PLUGIN_ERROR, plugin.name + ": " + entry + " returned no buffer");
  Tensor* raw = tensor.release();
  {
    std::lock_guard lock(objects_mutex_);
    tensors_.insert(raw);
  }
  raw->handle = tensor_table().add(raw);
  if (raw->handle == 0) {
    destroy_tensor(*raw);
    fail(PHX_STATUS_OUT_OF_MEMORY, "too many live tensors");
  }
  if (host != nullptr) {
    raw->release = host->release;
    raw->release_data = host->user_data;
  }
  if (tracer.active()) trace_memory(device);
  return *raw;
}

void Context::destroy_tensor(Tensor& tensor) {
  auto [release, user_data] = free_tensor(tensor);
  if (release != nullptr) release(user_data);
}

std::pair<phx_host_release_fn, void*> Context::free_tensor(Tensor& tensor) {
  tensor_table().remove(tensor.handle);
  {
    std::lock_guard lock(objects_mutex_);
    tensors_.erase(&tensor);
  }
  auto& plugin = *tensor.device->plugin;
  // The handle is gone: the tensor must be freed now whatever the wait says. A failed
  // wait (an op's error, a lost device) has still ended the streams' work on it.
  try {
    tensor.device->wait_for_streams();
  } catch (const Error& e) {
    logger->warn("tensor freed after a failed wait: {}", e.what());
  }
  {
    // Held work of another device's stream may name the tensor too (a copy between two
    // devices, ordered on the other's stream). The lock keeps those streams alive.
    std::lock_guard lock(objects_mutex_);
    for (Stream* stream : streams_) stream->release_held();
  }
  plugin.call_void("buffer_free",
                   [&] { plugin.api().buffer_free(plugin.instance(), tensor.buffer); });
  const std::pair release{tensor.release, tensor.release_data};
  Device& device = *tensor.device;
  delete &tensor;
  if (tracer.active()) trace_memory(device);
  return release;
}

void Context::trace_memory(Device& device) noexcept {
  phx_memory_stats stats{};
  stats.struct_size = sizeof stats;
  auto& plugin = *device.plugin;
  try {
    plugin.call("memory_stats", device.index, [&] {
      return plugin.api().memory_stats(plugin.instance(), device.local_index, &stats);
    });
    tracer.memory(device.index, stats.bytes_in_use);
  } catch (const std::exception& e) {
    // A trace without this sample is still a trace; the tensor's call goes on.
    logger->debug("trace: no memory sample of device {}: {}", device.index, e.what());
  }
}

Stream& Context::create_stream(Device& device) {
  auto stream = std::make_unique<Stream>();
  stream->context = this;
  stream->device = &device;
  stream->profiling = profiling;
  stream->trace_id = streams_created.fetch_add(1, std::memory_order_relaxed) + 1;
  auto& plugin = *device.plugin;
  plugin.call("stream_create", device.index, [&] {
    return plugin.api().stream_create(plugin.instance(), device.local_index,
                                      &stream->plugin_stream);
  });
  Stream* raw = stream.release();
  {
    std::lock_guard lock(objects_mutex_);
    streams_.insert(raw);
  }
  {
    std::lock_guard lock(device.streams_mutex);
    device.streams.push_back(raw);
  }
  raw->link->stream = raw;
  raw->handle = stream_table().add(raw);
  if (raw->handle == 0) {
    destroy_stream(*raw);
    fail(PHX_STATUS_OUT_OF_MEMORY, "too many live streams");
  }
  return *raw;
}

void Context::destroy_stream(Stream& stream) {
  stream_table().remove(stream.handle);
  {
    std::lock_guard lock(objects_mutex_);
    streams_.erase(&stream);
  }
  {
    std::lock_guard lock(stream.device->streams_mutex);
    auto& list = stream.device->streams;
    list.erase(std::remove(list.begin(), list.end(), &stream), list.end());
  }
  std::unique_ptr<Stream> owned(&stream);
  auto& plugin = *stream.device->plugin;
  try {
    stream.wait(UINT64_MAX);
  } catch (const Error& e) {
    logger->warn("stream destroyed with a failed op: {}", e.what());
  }
  {
    std::lock_guard lock(stream.link->mutex);
    stream.link->stream = nullptr;
  }
  plugin.call_void("stream_destroy",
                   [&] { plugin.api().stream_destroy(plugin.instance(), stream.plugin_stream); });
}

CalibratorObject& Context::create_calibrator(const phx_calibration_options& options) {
  auto calibrator = std::make_unique<CalibratorObject>(*this, options);
  CalibratorObject* raw = calibrator.release();
  {
    std::lock_guard lock(objects_mutex_);
    calibrators_.insert(raw);
  }
  raw->handle = calibrator_table().add(raw);
  if (raw->handle == 0) {
    destroy_calibrator(*raw);
    fail(PHX_STATUS_OUT_OF_MEMORY, "too many live calibrators");
  }
  return *raw;
}

void Context::destroy_calibrator(CalibratorObject& calibrator) {
  calibrator_table().remove(calibrator.handle);
  {
    std::lock_guard lock(objects_mutex_);
    calibrators_.erase(&calibrator);
  }
  delete &calibrator;
}

void Context::adopt(std::unique_ptr<ContextObject> object) {
  object->context = this;
  std::lock_guard lock(objects_mutex_);
  objects_.insert(object.get());  // may throw: object, still owned here, is then freed
  object.release();
}

void Context::destroy_object(ContextObject& object) {
  {
    std::lock_guard lock(objects_mutex_);
    objects_.erase(&object);
  }
  delete &object;
}

}  // namespace phx
