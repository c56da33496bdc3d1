// Stream.upload_async, download_async and copy_async: transfers ordered on a stream
// (comm.h). The C API has the caller keep the host memory valid until the transfer's
// ticket has finished; here the stream holds the numpy array's buffer (a buffer-protocol
// view, which also keeps numpy from resizing it) until the binding has seen that ticket
// finish: at the stream's next wait, synchronize, query or transfer, or, at the latest,
// when the stream is freed, which first waits for it.
#include <deque>
#include <utility>

#include "binding.h"

namespace phx_python {

// Destroyed with the GIL held (by the last Stream that shares it, a Python object).
struct HeldBuffers {
  ContextPtr owner;
  StreamPtr stream;
  // Tickets in the order they were issued, so finished ones are at the front. Guarded by
  // the stream's mutex; an entry is destroyed with the GIL held (PyBuffer_Release).
  std::deque<std::pair<uint64_t, py::buffer_info>> buffers;

  HeldBuffers(ContextPtr context, StreamPtr state)
      : owner(std::move(context)), stream(std::move(state)) {}
  HeldBuffers(const HeldBuffers&) = delete;
  HeldBuffers& operator=(const HeldBuffers&) = delete;
  ~HeldBuffers();
};

namespace {

// Whether the stream has passed ticket, after waiting for it. A failed wait has returned
// the stream's error without saying that the ticket finished, so the ticket is asked
// again; a stream the context's close() destroyed has finished its work once that close
// has returned.
bool wait_until_passed(HeldBuffers& self, uint64_t ticket) {
  py::gil_scoped_release release;
  {
    std::lock_guard<std::mutex> lock(self.stream->mutex);
    if (phx_stream_wait(self.stream->stream, ticket) == PHX_STATUS_OK) return true;
    int done = 0;
    if (phx_stream_query(self.stream->stream, ticket, &done) == PHX_STATUS_OK) return done != 0;
  }
  std::lock_guard<std::mutex> closed(self.owner->closing);
  return true;
}

// Queues a transfer from or into host's memory with call(stream, &ticket) and holds host
// until its ticket has been seen to finish.
template <typename Call>
uint64_t queue_holding(Stream& self, py::buffer_info host, Call call) {
  forget_finished_transfers(self);
  if (self.held == nullptr) self.held = std::make_shared<HeldBuffers>(self.owner, self.state);
  py::buffer_info refused;  // given back after the GIL is taken again
  uint64_t ticket = 0;
  phx_status status;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(self.state->mutex);
    // Held before the call, so that nothing can fail between queueing and holding.
    self.held->buffers.emplace_back(0, std::move(host));
    status = call(self.state->stream, &ticket);
    if (status == PHX_STATUS_OK) {
      self.held->buffers.back().first = ticket;
    } else {
      refused = std::move(self.held->buffers.back().second);
      self.held->buffers.pop_back();
    }
  }
  check(status);
  self.last_ticket = ticket;
  return ticket;
}

uint64_t upload_async(Stream& self, const TensorPtr& tensor, const py::buffer& buffer) {
  if (tensor == nullptr) raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: the tensor is None");
  phx_tensor handle = handle_of(*tensor);
  const uint64_t size = tensor->desc.byte_size;
  py::buffer_info host = contiguous_buffer(buffer, false, size);
  const void* source = host.ptr;
  return queue_holding(self, std::move(host), [&](phx_stream stream, uint64_t* ticket) {
    return phx_tensor_upload_async(stream, handle, 0, source, size, ticket);
  });
}

uint64_t download_async(Stream& self, const TensorPtr& tensor, const py::buffer& buffer) {
  if (tensor == nullptr) raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: the tensor is None");
  phx_tensor handle = handle_of(*tensor);
  const uint64_t size = tensor->desc.byte_size;
  py::buffer_info host = contiguous_buffer(buffer, true, size);
  void* destination = host.ptr;
  return queue_holding(self, std::move(host), [&](phx_stream stream, uint64_t* ticket) {
    return phx_tensor_download_async(stream, handle, 0, destination, size, ticket);
  });
}

uint64_t copy_async(Stream& self, const TensorPtr& dst, const TensorPtr& src) {
  phx_tensor destination = handle_or_null(dst);
  phx_tensor source = handle_or_null(src);
  uint64_t ticket = 0;
  phx_status status;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(self.state->mutex);
    status = phx_tensor_copy_async(self.state->stream, destination, source, &ticket);
  }
  check(status);
  self.last_ticket = ticket;
  return ticket;
}

}  // namespace

HeldBuffers::~HeldBuffers() {
  if (buffers.empty()) return;
  if (!wait_until_passed(*this, buffers.back().first)) {
    // Nothing says the device is done with them: kept for the life of the process
    // rather than given back under a transfer.
    for (auto& entry : buffers) new py::buffer_info(std::move(entry.second));
  }
}

void forget_finished_transfers(Stream& self) {
  if (self.held == nullptr) return;
  auto lock = lock_without_gil(self.state->mutex);
  auto& buffers = self.held->buffers;
  while (!buffers.empty()) {
    int done = 0;
    if (phx_stream_query(self.state->stream, buffers.front().first, &done) != PHX_STATUS_OK ||
        done == 0)
      break;
    buffers.pop_front();
  }
}

void bind_transfers(py::class_<Stream>& stream) {
  stream.def("_upload_async", &upload_async)
      .def("_download_async", &download_async)
      .def("copy_async", &copy_async)
      .def_property_readonly("held_transfers", [](const Stream& self) -> size_t {
        if (self.held == nullptr) return 0;
        auto lock = lock_without_gil(self.state->mutex);
        return self.held->buffers.size();
      });
}

}  // namespace phx_python
