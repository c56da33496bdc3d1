// The objects behind the C API's handles: a context owns its plugins, their devices,
// and every tensor and stream created in it. Each kind of object has a header of its own
// (device.h, tensor.h, stream.h, profile_entry.h, context_object.h), included here.
#pragma once

#include <phynexus/plugin.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "context_object.h"
#include "device.h"
#include "errors.h"
#include "handles.h"
#include "loaded_plugin.h"
#include "profile_entry.h"
#include "stream.h"
#include "tensor.h"
#include "trace_writer.h"

namespace phx {

struct CalibratorObject;

class Context {
 public:
  explicit Context(const phx_context_options& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  uintptr_t handle = 0;
  std::shared_ptr<spdlog::logger> logger;
  bool profiling = false;
  trace::Writer tracer;  // phx_trace_begin, PHX_TRACE
  std::atomic<uint32_t> streams_created{0};
  std::vector<std::unique_ptr<Plugin>> plugins;  // every candidate, in search order
  std::vector<std::unique_ptr<Device>> devices;
  // Where unsupported ops run with PHX_CONTEXT_FALLBACK_CPU: the first CPU device; null
  // without the flag or without such a device.
  Device* fallback_device = nullptr;

  Device& device(size_t index);  // NOT_FOUND past the end

  // Starts the context's trace (tracer.begin), naming each device's process after the
  // device and its plugin.
  void begin_trace(const std::string& path);

  // Counts the calling thread's running C API call as a user of the context until the
  // call returns (CallScope in errors.h), once however many of its handles the call
  // looks up; destroy_context waits for every such call. INVALID_ARGUMENT once
  // destruction has begun. The caller guarantees the context is alive meanwhile: it
  // holds the lock of a handle table that still lists the context or one of its objects.
  void retain_for_call();
  // Ends one retain_for_call. The context may be freed the moment it returns.
  void release_call() noexcept;

  // A tensor in memory the device allocates, or, given host, over the consumer's memory:
  // then, on success only, the tensor calls host->release when destroyed.
  Tensor& create_tensor(Device& device, phx_dtype dtype, size_t rank, const int64_t* shape,
                        const HostMemory* host = nullptr);
  void destroy_tensor(Tensor& tensor);
  Stream& create_stream(Device& device);
  void destroy_stream(Stream& stream);

 private:
  void add_devices(Plugin& plugin);
  // Adds device's bytes in use to the trace being written.
  void trace_memory(Device& device) noexcept;
  // Frees tensor and returns its host memory's release, which the caller calls (or
  // nothing to call, when release is null) once no lock is held.
  std::pair<phx_host_release_fn, void*> free_tensor(Tensor& tensor);

  friend void destroy_context(Context& context);
  // The calls that retained the context (the low bits) and, in the top bit, whether its
  // destruction has begun: one word, so that a release learns whether to wake the
  // destroyer in the same operation after which it may no longer touch the context.
  static constexpr uint32_t kDestroying = UINT32_C(1) << 31;
  std::atomic<uint32_t> call_state_{0};

  std::mutex objects_mutex_;
  std::unordered_set<Tensor*> tensors_;
  std::unordered_set<Stream*> streams_;

 public:
  // Calibrators are host objects; the context owns them so that its destruction frees
  // those the program forgot.
  CalibratorObject& create_calibrator(const phx_calibration_options& options);
  void destroy_calibrator(CalibratorObject& calibrator);

 private:
  std::unordered_set<CalibratorObject*> calibrators_;

 public:
  // Takes ownership of object (its context set to this one).
  void adopt(std::unique_ptr<ContextObject> object);
  // Destroys an object adopt took.
  void destroy_object(ContextObject& object);

 private:
  std::unordered_set<ContextObject*> objects_;
};

// The live object of handle in a table of a layer above the runtime, with its context
// retained for the running call, as lookup does. Throws INVALID_ARGUMENT for a null,
// stale or made-up handle, naming what.
template <typename Object, typename Table>
Object& lookup_object(Table& table, const void* handle, const char* what) {
  if (handle == nullptr) fail(PHX_STATUS_INVALID_ARGUMENT, std::string(what) + " is null");
  Object* object = table.find(reinterpret_cast<uintptr_t>(handle),
                              [](Object& found) { found.context->retain_for_call(); });
  if (object == nullptr)
    fail(PHX_STATUS_INVALID_ARGUMENT, std::string(what) + " is not a live handle (destroyed?)");
  return *object;
}

// Registers the handle of an object of a layer above the runtime, then gives the object
// to its context; returns the handle. The object's destructor removes it from table.
template <typename Object, typename Table>
uintptr_t register_object(Context& context, std::unique_ptr<Object> object, Table& table,
                          const char* what) {
  object->context = &context;
  object->handle = table.add(object.get());
  if (object->handle == 0) fail(PHX_STATUS_OUT_OF_MEMORY, std::string("too many live ") + what);
  const uintptr_t handle = object->handle;
  context.adopt(std::move(object));
  return handle;
}

// phx_context_destroy: turns away the calls that begin from now on, waits for those
// that retained the context (the calling one's own retain aside), then frees the
// context with every object in it. INVALID_ARGUMENT when another thread has begun
// destroying it. The caller has retained the context (looked its handle up).
void destroy_context(Context& context);

// The process-wide handle tables, and lookups that throw INVALID_ARGUMENT for a null,
// stale or made-up handle, or for an object whose context is being destroyed. Each
// lookup retains the object's context for the running C API call (retain_for_call).
using ContextTable = HandleTable<Context, 0xc1>;
using TensorTable = HandleTable<Tensor, 0xc2>;
using StreamTable = HandleTable<Stream, 0xc3>;
using CalibratorTable = HandleTable<CalibratorObject, 0xc4>;
ContextTable& context_table();
TensorTable& tensor_table();
StreamTable& stream_table();
CalibratorTable& calibrator_table();
Context& lookup(phx_context handle);
Tensor& lookup(phx_tensor handle);
Stream& lookup(phx_stream handle);
CalibratorObject& lookup(phx_calibrator handle);

}  // namespace phx
