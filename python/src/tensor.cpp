// phynexus._phynexus.Tensor: a tensor of a context, filled from and read into host
// buffers (numpy arrays, through the buffer protocol), copied between devices, and, on a
// device whose memory is the host's, viewed in place by numpy arrays.
#include <pybind11/numpy.h>

#include "binding.h"

namespace phx_python {
namespace {

TensorPtr from_buffer(const ContextPtr& context, size_t device, int dtype,
                      const std::vector<int64_t>& shape, const py::buffer& buffer) {
  TensorPtr tensor = create_tensor(context, device, static_cast<phx_dtype>(dtype), shape);
  py::buffer_info info = contiguous_buffer(buffer, false, tensor->desc.byte_size);
  phx_status status;
  {
    py::gil_scoped_release release;
    status = phx_tensor_upload(tensor->tensor, 0, info.ptr, tensor->desc.byte_size);
  }
  check(status);
  return tensor;
}

void download(const Tensor& self, const py::buffer& buffer) {
  phx_tensor handle = handle_of(self);
  py::buffer_info info = contiguous_buffer(buffer, true, self.desc.byte_size);
  phx_status status;
  {
    py::gil_scoped_release release;
    status = phx_tensor_download(handle, 0, info.ptr, self.desc.byte_size);
  }
  check(status);
}

TensorPtr copy_to(const Tensor& self, size_t device) {
  phx_tensor source = handle_of(self);
  std::vector<int64_t> shape(self.desc.shape, self.desc.shape + self.desc.rank);
  TensorPtr copy = create_tensor(self.owner, device, self.desc.dtype, shape);
  phx_status status;
  {
    py::gil_scoped_release release;
    status = phx_tensor_copy(copy->tensor, source);
  }
  check(status);
  return copy;
}

// A numpy array of numpy_dtype viewing the tensor's memory in place, or None when its
// device's memory is not the host's. The array keeps the tensor alive.
py::object host_array(const TensorPtr& self, const py::dtype& numpy_dtype) {
  std::unique_ptr<HostView> view = view_host_memory(self);
  if (view == nullptr) return py::none();
  if (static_cast<uint64_t>(numpy_dtype.itemsize()) != phx_dtype_size(self->desc.dtype))
    raise_error(PHX_STATUS_INVALID_ARGUMENT,
                "phynexus: host_array: the numpy dtype's size is "
                "not the tensor's element size");
  std::vector<ssize_t> shape(self->desc.shape, self->desc.shape + self->desc.rank);
  void* data = view->data;
  py::capsule base(view.release(), [](void* v) { delete static_cast<HostView*>(v); });
  return py::array(numpy_dtype, shape, {}, data, base);
}

}  // namespace

Tensor::Tensor(ContextPtr context, phx_tensor handle) : owner(std::move(context)), tensor(handle) {}

Tensor::~Tensor() {
  // Waits for queued work that uses it; a tensor whose context was destroyed first is
  // answered INVALID_ARGUMENT by the library, which is what close() ignores.
  py::gil_scoped_release release;
  close();
}

void Tensor::close() {
  if (tensor == nullptr) return;
  phx_tensor_destroy(tensor);
  tensor = nullptr;
}

py::tuple Tensor::shape() const {
  py::tuple out(desc.rank);
  for (uint32_t i = 0; i < desc.rank; ++i) out[i] = desc.shape[i];
  return out;
}

py::buffer_info contiguous_buffer(const py::buffer& buffer, bool writable, uint64_t byte_size) {
  py::buffer_info info = buffer.request(writable);
  int64_t expected_stride = info.itemsize;
  for (ssize_t dim = info.ndim - 1; dim >= 0; --dim) {
    if (info.shape[dim] > 1 && info.strides[dim] != expected_stride)
      raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: the buffer is not C-contiguous");
    expected_stride *= info.shape[dim];
  }
  const uint64_t size = static_cast<uint64_t>(info.size) * static_cast<uint64_t>(info.itemsize);
  if (size != byte_size)
    raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: the buffer holds " + std::to_string(size) +
                                                 " bytes, the tensor " + std::to_string(byte_size));
  return info;
}

phx_tensor handle_of(const Tensor& tensor) {
  if (tensor.tensor == nullptr)
    raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: the tensor was closed");
  return tensor.tensor;
}

phx_tensor handle_or_null(const TensorPtr& tensor) {
  return tensor == nullptr ? nullptr : handle_of(*tensor);
}

TensorPtr create_tensor(const ContextPtr& context, size_t device, phx_dtype dtype,
                        const std::vector<int64_t>& shape) {
  phx_tensor handle = nullptr;
  check(phx_tensor_create(require(context, "Tensor: the context").context, device, dtype,
                          shape.size(), shape.data(), &handle));
  auto tensor = std::make_shared<Tensor>(context, handle);
  check(phx_tensor_describe(handle, &tensor->desc));
  return tensor;
}

TensorPtr create_tensor_over(const ContextPtr& context, size_t device, phx_dtype dtype,
                             const std::vector<int64_t>& shape, void* data,
                             phx_host_release_fn release, void* user_data, bool* taken) {
  phx_tensor handle = nullptr;
  const phx_status status =
      phx_tensor_create_from_host(context->context, device, dtype, shape.size(), shape.data(), data,
                                  release, user_data, &handle);
  *taken = status == PHX_STATUS_OK;
  if (status == PHX_STATUS_UNSUPPORTED) return nullptr;
  check(status);
  auto tensor = std::make_shared<Tensor>(context, handle);
  check(phx_tensor_describe(handle, &tensor->desc));
  return tensor;
}

HostView::HostView(TensorPtr viewed, void* address) : tensor(std::move(viewed)), data(address) {
  ++tensor->host_views;
  ++tensor->owner->host_views;
}

HostView::~HostView() {
  --tensor->host_views;
  --tensor->owner->host_views;
}

std::unique_ptr<HostView> view_host_memory(const TensorPtr& self) {
  phx_tensor handle = handle_of(require(self, "the tensor"));
  void* data = nullptr;
  phx_status status;
  {
    py::gil_scoped_release release;
    status = phx_tensor_host_data(handle, &data);
  }
  if (status == PHX_STATUS_UNSUPPORTED) return nullptr;
  check(status);
  return std::make_unique<HostView>(self, data);
}

void refuse_while_viewed(size_t views, const char* what) {
  if (views != 0)
    raise_error(PHX_STATUS_INVALID_ARGUMENT,
                std::string("phynexus: ") + what + ": " + std::to_string(views) +
                    " numpy array(s) or DLPack capsule(s) still view its memory; drop them first");
}

void bind_tensor(py::module_& module) {
  py::class_<Tensor, TensorPtr>(module, "Tensor")
      .def_static("empty",
                  [](const ContextPtr& context, size_t device, int dtype,
                     const std::vector<int64_t>& shape) {
                    return create_tensor(context, device, static_cast<phx_dtype>(dtype), shape);
                  })
      .def_static("from_buffer", &from_buffer)
      .def("download", &download)
      .def("copy_to", &copy_to)
      .def("close",
           [](Tensor& self) {
             refuse_while_viewed(self.host_views, "Tensor.close");
             py::gil_scoped_release release;
             self.close();
           })
      .def("host_array", &host_array)
      .def_property_readonly("closed", [](const Tensor& self) { return self.tensor == nullptr; })
      // Not &Tensor::shape: pybind11 would pass None to a member pointer as a null self.
      .def_property_readonly("shape", [](const Tensor& self) { return self.shape(); })
      .def_property_readonly("dtype_id",
                             [](const Tensor& self) { return static_cast<int>(self.desc.dtype); })
      .def_property_readonly("device_index", [](const Tensor& self) { return self.desc.device; })
      .def_property_readonly("nbytes", [](const Tensor& self) { return self.desc.byte_size; })
      .def_property_readonly("size", [](const Tensor& self) { return self.desc.element_count; })
      .def_property_readonly("context", [](const Tensor& self) { return self.owner; });
}

}  // namespace phx_python
