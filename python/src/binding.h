// Shared by the files of the _phynexus extension: the state a context's Python objects
// share, the status-to-exception translation and the small helpers every binding uses.
// The extension sees only the public C API (include/phynexus/phynexus.h and the headers it
// includes).
#pragma once

#include <phynexus/phynexus.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace phx_python {

namespace py = pybind11;

// Raises the exception class of status (Error or one of its subclasses) with the calling
// thread's last error, prefixed by what was called. Does nothing for PHX_STATUS_OK.
void check(phx_status status);
// Raises the exception class of status with message (for errors found by the binding).
[[noreturn]] void raise_error(phx_status status, const std::string& message);
// Registers phynexus.Error and one subclass per status in module.
void register_errors(py::module_& module);

// *object, or raises InvalidArgumentError "phynexus: <what> is None". pybind11 hands None
// to a shared_ptr parameter as null: every such parameter that the binding dereferences
// goes through this (docs/python.md promises an error, never a crash, for None).
template <typename T>
T& require(const std::shared_ptr<T>& object, const char* what) {
  if (object == nullptr)
    raise_error(PHX_STATUS_INVALID_ARGUMENT, std::string("phynexus: ") + what + " is None");
  return *object;
}

struct StreamState;

// A context and what its objects share. Every Tensor, Stream, Graph and Executable holds
// a shared_ptr to it, so the context is destroyed after the last of them (or by close()).
struct ContextState {
  // Atomic: close() may run while other threads use the context (phynexus.h allows it);
  // they then pass the destroyed handle, which the library answers INVALID_ARGUMENT.
  std::atomic<phx_context> context{nullptr};
  std::mutex mutex;  // guards the maps below
  std::map<size_t, std::shared_ptr<StreamState>> default_streams;
  // Output descriptions of eager ops, keyed by op, parameters and input descriptions.
  std::unordered_map<std::string, std::vector<phx_tensor_desc>> output_desc_cache;
  // numpy arrays and DLPack capsules viewing the memory of its tensors (HostView): while
  // there are any, close() is refused, which would free that memory under them.
  std::atomic<size_t> host_views{0};
  // Held by close() while it destroys the context, which finishes the work of every stream
  // in it: a binding that finds a stream destroyed under it takes this to wait for that.
  std::mutex closing;

  ~ContextState();
  void close();
};
using ContextPtr = std::shared_ptr<ContextState>;

// A stream and the lock that serializes the calls naming it (the C API has streams
// externally synchronized; Python threads may share one).
// Holds no reference to its context: the context's default streams are kept in it, and a
// reference back would make a cycle. The Stream wrapper (stream.cpp) holds the context.
struct StreamState {
  phx_stream stream = nullptr;
  size_t device = 0;
  std::mutex mutex;
  ~StreamState();
};
using StreamPtr = std::shared_ptr<StreamState>;

struct HeldBuffers;  // transfer.cpp

// A stream as Python sees it: the stream and the context it keeps alive.
struct Stream {
  ContextPtr owner;
  StreamPtr state;
  uint64_t last_ticket = 0;
  // The host buffers of its asynchronous transfers not yet known to have finished; made by
  // the first one.
  std::shared_ptr<HeldBuffers> held{};
};

// Locks mutex with the GIL released while waiting, so that a thread that holds mutex and
// waits for the GIL can never wait on this one. Every mutex held across a GIL release is
// taken this way.
std::unique_lock<std::mutex> lock_without_gil(std::mutex& mutex);

struct Tensor {
  ContextPtr owner;
  phx_tensor tensor = nullptr;
  phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
  Tensor(ContextPtr context, phx_tensor handle);
  ~Tensor();
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  void close();
  py::tuple shape() const;
  std::atomic<size_t> host_views{0};  // as ContextState's, for this tensor alone
};
using TensorPtr = std::shared_ptr<Tensor>;

// A numpy array's or a DLPack capsule's view of a tensor's memory in place (the CPU
// device's, phx_tensor_host_data): keeps the tensor, and so the memory, alive, and is
// counted so that closing the tensor or its context is refused meanwhile. Destroy it
// with the GIL held.
struct HostView {
  TensorPtr tensor;
  void* data = nullptr;
  explicit HostView(TensorPtr viewed, void* address);
  ~HostView();
  HostView(const HostView&) = delete;
  HostView& operator=(const HostView&) = delete;
};
// The view of self's memory in place, or null when its device's memory is not the host's.
std::unique_ptr<HostView> view_host_memory(const TensorPtr& self);
// Raises InvalidArgumentError naming what while views of the memory exist.
void refuse_while_viewed(size_t views, const char* what);

// A handle, or raises InvalidArgumentError for a closed tensor.
phx_tensor handle_of(const Tensor& tensor);
// handle_of, or null for None (the C API then names the missing tensor).
phx_tensor handle_or_null(const TensorPtr& tensor);
// A C-contiguous buffer of exactly byte_size bytes, or raises InvalidArgumentError.
py::buffer_info contiguous_buffer(const py::buffer& buffer, bool writable, uint64_t byte_size);
// A tensor of dtype and shape on device of context.
TensorPtr create_tensor(const ContextPtr& context, size_t device, phx_dtype dtype,
                        const std::vector<int64_t>& shape);
// A tensor of dtype and shape on device over the host memory at data, which the library
// gives back with release(user_data) (phx_tensor_create_from_host); null when the device
// cannot compute on host memory. *taken says whether the library took the memory, also
// when this raises: if not, the memory is still the caller's.
TensorPtr create_tensor_over(const ContextPtr& context, size_t device, phx_dtype dtype,
                             const std::vector<int64_t>& shape, void* data,
                             phx_host_release_fn release, void* user_data, bool* taken);
// The default stream of device, created on first use.
StreamPtr default_stream(const ContextPtr& context, size_t device);

// The parameter struct in bytes (as phynexus/_ops.py packs it) copied into memory aligned
// for any of the C structs; empty for None.
std::vector<uint64_t> params_from_bytes(const py::object& params);

void bind_context(py::module_& module);
void bind_tensor(py::module_& module);
void bind_stream(py::module_& module);
// Stream methods of other files, and the classes they need.
void bind_events(py::module_& module, py::class_<Stream>& stream);
void bind_transfers(py::class_<Stream>& stream);
// Drops the host buffers of self's asynchronous transfers whose tickets have finished.
void forget_finished_transfers(Stream& self);
void bind_comm(py::module_& module);
void bind_dlpack(py::module_& module);
void bind_graph(py::module_& module);

}  // namespace phx_python
