// phynexus._phynexus.Event, Stream.record_event and Stream.wait_event: events order the
// streams of a context's devices without blocking the host (comm.h).
#include "binding.h"

namespace phx_python {
namespace {

// Keeps its context alive, as a tensor does; an event whose context was closed first is
// answered INVALID_ARGUMENT by the library, which the destructor ignores.
struct Event {
  ContextPtr owner;
  phx_event event = nullptr;
  explicit Event(ContextPtr context) : owner(std::move(context)) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (event != nullptr) phx_event_destroy(event);
  }
};
using EventPtr = std::shared_ptr<Event>;

EventPtr record_event(Stream& self, std::optional<uint64_t> ticket) {
  auto event = std::make_shared<Event>(self.owner);
  phx_status status;
  {
    auto lock = lock_without_gil(self.state->mutex);
    status = phx_event_record(self.state->stream, ticket.value_or(0), &event->event);
  }
  check(status);
  return event;
}

void wait_event(Stream& self, const EventPtr& event) {
  if (event == nullptr) raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: the event is None");
  auto lock = lock_without_gil(self.state->mutex);
  check(phx_stream_wait_event(self.state->stream, event->event));
}

}  // namespace

void bind_events(py::module_& module, py::class_<Stream>& stream) {
  py::class_<Event, EventPtr>(module, "Event")
      .def("query",
           [](const Event& self) {
             int done = 0;
             check(phx_event_query(self.event, &done));
             return done != 0;
           })
      .def("synchronize",
           [](const Event& self) {
             phx_status status;
             {
               py::gil_scoped_release release;
               status = phx_event_synchronize(self.event);
             }
             check(status);
           })
      .def_property_readonly("context", [](const Event& self) { return self.owner; });
  stream.def("record_event", &record_event, py::arg("ticket") = py::none())
      .def("wait_event", &wait_event);
}

}  // namespace phx_python
