// phynexus._phynexus: the extension module. Each part is bound in its own file.
#include "binding.h"

PYBIND11_MODULE(_phynexus, module) {
  module.doc() = "Phynexus C API bindings; use the phynexus package, not this module.";
  phx_python::register_errors(module);
  phx_python::bind_context(module);
  phx_python::bind_tensor(module);
  phx_python::bind_stream(module);
  phx_python::bind_dlpack(module);
  phx_python::bind_graph(module);
  phx_python::bind_comm(module);
}
