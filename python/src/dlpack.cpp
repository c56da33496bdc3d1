// DLPack both ways, in place where the device's memory is the host's (the CPU device):
// __dlpack__ exports the tensor's own memory (phx_tensor_host_data), and from_dlpack makes a
// tensor over the producer's (phx_tensor_create_from_host). Elsewhere, or when asked to,
// they copy: __dlpack__ downloads the tensor into host memory that the capsule owns, and
// from_dlpack uploads the producer's host memory.
#include <dlpack/dlpack.h>

#include <cstdlib>
#include <optional>

#include "binding.h"

namespace phx_python {
namespace {

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

// One exported tensor: the DLManagedTensor and what it points to, a copy the capsule owns
// or a view of the tensor's memory in place.
struct Exported {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  void* copy = nullptr;
  std::unique_ptr<HostView> view;
};

// A consumer may call it from any thread, with or without the GIL; dropping a view may
// free the tensor, which needs it.
void delete_exported(DLManagedTensor* managed) {
  py::gil_scoped_acquire gil;
  auto* exported = static_cast<Exported*>(managed->manager_ctx);
  std::free(exported->copy);
  delete exported;
}

void delete_unconsumed_capsule(PyObject* capsule) {
  // A consumer renames the capsule and becomes the owner; an unconsumed one is ours.
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

DLDataType dl_dtype(phx_dtype dtype) {
  switch (dtype) {
    case PHX_DTYPE_F32:
      return {kDLFloat, 32, 1};
    case PHX_DTYPE_F16:
      return {kDLFloat, 16, 1};
    case PHX_DTYPE_BF16:
      return {kDLBfloat, 16, 1};
    case PHX_DTYPE_I8:
      return {kDLInt, 8, 1};
    case PHX_DTYPE_I16:
      return {kDLInt, 16, 1};
    case PHX_DTYPE_I32:
      return {kDLInt, 32, 1};
    case PHX_DTYPE_U8:
      return {kDLUInt, 8, 1};
    default:
      raise_error(PHX_STATUS_UNSUPPORTED, "phynexus: no DLPack dtype for this tensor");
  }
}

phx_dtype phx_dtype_of(DLDataType dtype) {
  if (dtype.lanes == 1) {
    if (dtype.code == kDLFloat && dtype.bits == 32) return PHX_DTYPE_F32;
    if (dtype.code == kDLFloat && dtype.bits == 16) return PHX_DTYPE_F16;
    if (dtype.code == kDLBfloat && dtype.bits == 16) return PHX_DTYPE_BF16;
    if (dtype.code == kDLInt && dtype.bits == 8) return PHX_DTYPE_I8;
    if (dtype.code == kDLInt && dtype.bits == 16) return PHX_DTYPE_I16;
    if (dtype.code == kDLInt && dtype.bits == 32) return PHX_DTYPE_I32;
    if (dtype.code == kDLUInt && dtype.bits == 8) return PHX_DTYPE_U8;
  }
  raise_error(PHX_STATUS_UNSUPPORTED, "phynexus.from_dlpack: unsupported DLPack dtype (code " +
                                          std::to_string(dtype.code) + ", bits " +
                                          std::to_string(dtype.bits) + ", lanes " +
                                          std::to_string(dtype.lanes) + ")");
}

// A host copy of self's contents, which the capsule owns.
void* download_copy(const Tensor& self) {
  phx_tensor handle = handle_of(self);
  // 256-byte alignment, as the DLPack header asks of data pointers.
  const size_t bytes = (self.desc.byte_size + 255) / 256 * 256;
  void* copy = std::aligned_alloc(256, bytes == 0 ? 256 : bytes);
  if (copy == nullptr) raise_error(PHX_STATUS_OUT_OF_MEMORY, "phynexus: __dlpack__");
  phx_status status;
  {
    py::gil_scoped_release release;
    status = phx_tensor_download(handle, 0, copy, self.desc.byte_size);
  }
  if (status != PHX_STATUS_OK) std::free(copy);
  check(status);
  return copy;
}

// copy: True always copies; False refuses (BufferError) where a copy is needed; None
// copies only where the memory cannot be shared.
py::capsule to_dlpack(const TensorPtr& self, std::optional<bool> copy) {
  const DLDataType dtype = dl_dtype(require(self, "to_dlpack: the tensor").desc.dtype);
  auto exported = std::make_unique<Exported>();
  exported->shape.assign(self->desc.shape, self->desc.shape + self->desc.rank);
  if (copy != true) exported->view = view_host_memory(self);
  if (exported->view == nullptr) {
    if (copy == false)
      throw py::buffer_error(
          "phynexus: __dlpack__: the tensor's device memory is not the "
          "host's, so it can only be copied");
    exported->copy = download_copy(*self);
  }
  DLTensor& tensor = exported->managed.dl_tensor;
  tensor.data = exported->view != nullptr ? exported->view->data : exported->copy;
  tensor.device = {kDLCPU, 0};
  tensor.ndim = static_cast<int>(self->desc.rank);
  tensor.dtype = dtype;
  tensor.shape = exported->shape.data();
  tensor.strides = nullptr;  // compact, row-major
  tensor.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = delete_exported;
  DLManagedTensor* managed = &exported.release()->managed;
  return py::capsule(managed, kCapsuleName, &delete_unconsumed_capsule);
}

// Row-major and dense: strides null, or each the product of the sizes after it.
bool is_compact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int dim = tensor.ndim - 1; dim >= 0; --dim) {
    if (tensor.shape[dim] != 1 && tensor.strides[dim] != expected) return false;
    expected *= tensor.shape[dim];
  }
  return true;
}

// Gives a producer's memory back once the library is done with it (a tensor over it was
// destroyed), from whatever thread destroyed the tensor.
void release_producer(void* managed) {
  py::gil_scoped_acquire gil;
  auto* m = static_cast<DLManagedTensor*>(managed);
  if (m->deleter != nullptr) m->deleter(m);
}

// copy as for to_dlpack: in place unless True, where the device allows it and the
// producer's data is aligned to its element size.
TensorPtr from_dlpack_capsule(const ContextPtr& context, size_t device, const py::capsule& capsule,
                              std::optional<bool> copy) {
  require(context, "from_dlpack: the context");
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsuleName))
    raise_error(PHX_STATUS_INVALID_ARGUMENT,
                "phynexus.from_dlpack: not an unconsumed \"dltensor\" capsule");
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  // From here the capsule is ours: the deleter runs however this ends.
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  std::unique_ptr<DLManagedTensor, void (*)(DLManagedTensor*)> owned(managed,
                                                                     [](DLManagedTensor* m) {
                                                                       if (m->deleter != nullptr)
                                                                         m->deleter(m);
                                                                     });
  const DLTensor& source = managed->dl_tensor;
  if (source.device.device_type != kDLCPU && source.device.device_type != kDLCUDAHost)
    raise_error(PHX_STATUS_UNSUPPORTED,
                "phynexus.from_dlpack: only host memory is taken (DLPack device type " +
                    std::to_string(source.device.device_type) + ")");
  if (source.ndim < 0 || source.ndim > PHX_MAX_RANK)
    raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus.from_dlpack: bad rank");
  if (!is_compact(source))
    raise_error(PHX_STATUS_INVALID_ARGUMENT,
                "phynexus.from_dlpack: strided tensors are not taken; make it contiguous first");
  std::vector<int64_t> shape(source.shape, source.shape + source.ndim);
  const phx_dtype dtype = phx_dtype_of(source.dtype);
  char* data = static_cast<char*>(source.data) + source.byte_offset;
  if (copy != true && reinterpret_cast<uintptr_t>(data) % phx_dtype_size(dtype) == 0) {
    // Once the library took the memory, the tensor gives it back through release_producer.
    bool taken = false;
    TensorPtr shared;
    try {
      shared = create_tensor_over(context, device, dtype, shape, data, release_producer, managed,
                                  &taken);
    } catch (...) {
      if (taken) owned.release();
      throw;
    }
    if (taken) {
      owned.release();
      return shared;
    }
  }
  if (copy == false)
    throw py::buffer_error(
        "phynexus.from_dlpack: the device cannot compute on this memory in "
        "place (not the host's, or data misaligned), so it can only be copied");
  TensorPtr tensor = create_tensor(context, device, dtype, shape);
  phx_status status;
  {
    py::gil_scoped_release release;
    status = phx_tensor_upload(tensor->tensor, 0, data, tensor->desc.byte_size);
  }
  check(status);
  return tensor;
}

}  // namespace

void bind_dlpack(py::module_& module) {
  module.def("to_dlpack", &to_dlpack, py::arg("tensor"), py::arg("copy") = py::none());
  module.def("from_dlpack_capsule", &from_dlpack_capsule, py::arg("context"), py::arg("device"),
             py::arg("capsule"), py::arg("copy") = py::none());
  module.attr("DLPACK_CPU") = static_cast<int>(kDLCPU);
}

}  // namespace phx_python
