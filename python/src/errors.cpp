// phynexus.Error and a subclass per phx_status, raised with the C library's last error.
#include <array>

#include "binding.h"

namespace phx_python {
namespace {

// The Python name of each status's exception, indexed by phx_status.
constexpr std::array<const char*, 10> kErrorNames = {
    "Error",                   // PHX_STATUS_OK: never raised
    "InvalidArgumentError",    // PHX_STATUS_INVALID_ARGUMENT
    "NotFoundError",           // PHX_STATUS_NOT_FOUND
    "UnsupportedError",        // PHX_STATUS_UNSUPPORTED
    "OutOfMemoryError",        // PHX_STATUS_OUT_OF_MEMORY
    "DeviceUnavailableError",  // PHX_STATUS_DEVICE_UNAVAILABLE
    "PluginError",             // PHX_STATUS_PLUGIN_ERROR
    "CompilationError",        // PHX_STATUS_COMPILATION_ERROR
    "InternalError",           // PHX_STATUS_INTERNAL
    "IncompatibleError",       // PHX_STATUS_INCOMPATIBLE
};

// Owned by the module (added to it as attributes); live as long as the interpreter.
std::array<PyObject*, kErrorNames.size()> error_classes{};

}  // namespace

void register_errors(py::module_& module) {
  PyObject* base = PyErr_NewExceptionWithDoc(
      "phynexus.Error",
      "A Phynexus call failed; .status is the phx_status name, str() the library's message.",
      PyExc_RuntimeError, nullptr);
  error_classes[0] = base;
  module.add_object("Error", py::handle(base));
  for (size_t status = 1; status < kErrorNames.size(); ++status) {
    std::string name = std::string("phynexus.") + kErrorNames[status];
    // A bad argument is a ValueError too, as Python code expects of one.
    PyObject* bases = status == PHX_STATUS_INVALID_ARGUMENT
                          ? PyTuple_Pack(2, base, PyExc_ValueError)
                          : PyTuple_Pack(1, base);
    error_classes[status] = PyErr_NewException(name.c_str(), bases, nullptr);
    Py_DECREF(bases);
    PyObject_SetAttrString(error_classes[status], "status",
                           py::str(phx_status_name(static_cast<phx_status>(status))).ptr());
    module.add_object(kErrorNames[status], py::handle(error_classes[status]));
  }
}

void raise_error(phx_status status, const std::string& message) {
  const size_t index = static_cast<size_t>(status);
  PyObject* type = index < error_classes.size() ? error_classes[index] : error_classes[0];
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

void check(phx_status status) {
  if (status == PHX_STATUS_OK) return;
  std::string message = phx_last_error();
  raise_error(status, message.empty() ? phx_status_name(status) : message);
}

}  // namespace phx_python
