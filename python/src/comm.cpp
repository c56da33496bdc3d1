// phynexus._phynexus.Communicator: a communicator of one context's devices and its
// collectives, messages and sharding (comm.h). Each call only queues its rank's part on
// that rank's stream, so one thread may call every rank in turn before waiting.
#include "binding.h"

namespace phx_python {
namespace {

// Keeps its context alive, as a tensor does; a communicator whose context was closed
// first is answered INVALID_ARGUMENT by the library, which the destructor ignores.
struct Communicator {
  ContextPtr owner;
  phx_comm comm = nullptr;
  size_t ranks = 0;
  // comm.h has each rank's calls externally synchronized; one lock per rank lets threads
  // drive different ranks at once. close() takes them all.
  std::unique_ptr<std::mutex[]> rank_mutexes;

  Communicator(const ContextPtr& context, const std::vector<size_t>& devices, uint32_t timeout_ms)
      : owner(context),
        ranks(devices.size()),
        rank_mutexes(std::make_unique<std::mutex[]>(devices.size())) {
    phx_comm_options options = PHX_COMM_OPTIONS_INIT;
    options.timeout_ms = timeout_ms;
    check(phx_comm_create(require(context, "Communicator: the context").context, devices.data(),
                          devices.size(), &options, &comm));
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator() {
    if (comm == nullptr) return;
    // Destroying fails the collectives that miss ranks, which their streams' threads do.
    py::gil_scoped_release release;
    phx_comm_destroy(comm);
  }

  void close() {
    py::gil_scoped_release release;
    std::vector<std::unique_lock<std::mutex>> locks;
    for (size_t r = 0; r < ranks; ++r) locks.emplace_back(rank_mutexes[r]);
    if (comm != nullptr) phx_comm_destroy(comm);
    comm = nullptr;
  }
};

// Queues rank's part with call(comm, stream, &ticket); the ticket is the stream's last.
template <typename Call>
uint64_t queue_part(Communicator& self, size_t rank, Stream& stream, Call call) {
  if (rank >= self.ranks)
    raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: rank " + std::to_string(rank) +
                                                 " is out of range (" + std::to_string(self.ranks) +
                                                 " ranks)");
  uint64_t ticket = 0;
  phx_status status = PHX_STATUS_OK;
  bool closed = false;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> rank_lock(self.rank_mutexes[rank]);
    std::lock_guard<std::mutex> stream_lock(stream.state->mutex);
    closed = self.comm == nullptr;
    if (!closed) status = call(self.comm, stream.state->stream, &ticket);
  }
  if (closed) raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: the communicator was closed");
  check(status);
  stream.last_ticket = ticket;
  return ticket;
}

uint64_t all_reduce(Communicator& self, size_t rank, Stream& stream, const TensorPtr& send,
                    const TensorPtr& recv, int op) {
  phx_tensor s = handle_or_null(send), r = handle_or_null(recv);
  return queue_part(self, rank, stream, [&](phx_comm comm, phx_stream st, uint64_t* ticket) {
    return phx_all_reduce(comm, rank, st, s, r, static_cast<phx_reduce_op>(op), ticket);
  });
}

uint64_t all_gather(Communicator& self, size_t rank, Stream& stream, const TensorPtr& send,
                    const TensorPtr& recv) {
  phx_tensor s = handle_or_null(send), r = handle_or_null(recv);
  return queue_part(self, rank, stream, [&](phx_comm comm, phx_stream st, uint64_t* ticket) {
    return phx_all_gather(comm, rank, st, s, r, ticket);
  });
}

uint64_t reduce_scatter(Communicator& self, size_t rank, Stream& stream, const TensorPtr& send,
                        const TensorPtr& recv, int op) {
  phx_tensor s = handle_or_null(send), r = handle_or_null(recv);
  return queue_part(self, rank, stream, [&](phx_comm comm, phx_stream st, uint64_t* ticket) {
    return phx_reduce_scatter(comm, rank, st, s, r, static_cast<phx_reduce_op>(op), ticket);
  });
}

uint64_t broadcast(Communicator& self, size_t rank, Stream& stream, const TensorPtr& tensor,
                   size_t root) {
  phx_tensor t = handle_or_null(tensor);
  return queue_part(self, rank, stream, [&](phx_comm comm, phx_stream st, uint64_t* ticket) {
    return phx_broadcast(comm, rank, st, t, root, ticket);
  });
}

uint64_t send(Communicator& self, size_t rank, Stream& stream, const TensorPtr& tensor,
              size_t peer) {
  phx_tensor t = handle_or_null(tensor);
  return queue_part(self, rank, stream, [&](phx_comm comm, phx_stream st, uint64_t* ticket) {
    return phx_send(comm, rank, st, t, peer, ticket);
  });
}

uint64_t recv(Communicator& self, size_t rank, Stream& stream, const TensorPtr& tensor,
              size_t peer) {
  phx_tensor t = handle_or_null(tensor);
  return queue_part(self, rank, stream, [&](phx_comm comm, phx_stream st, uint64_t* ticket) {
    return phx_recv(comm, rank, st, t, peer, ticket);
  });
}

uint64_t shard_scatter(Communicator& self, size_t rank, Stream& stream, const TensorPtr& full,
                       size_t root, size_t axis, const TensorPtr& part) {
  phx_tensor f = handle_or_null(full), p = handle_or_null(part);
  return queue_part(self, rank, stream, [&](phx_comm comm, phx_stream st, uint64_t* ticket) {
    return phx_shard_scatter(comm, rank, st, f, root, axis, p, ticket);
  });
}

uint64_t shard_gather(Communicator& self, size_t rank, Stream& stream, const TensorPtr& part,
                      size_t axis, const TensorPtr& full) {
  phx_tensor p = handle_or_null(part), f = handle_or_null(full);
  return queue_part(self, rank, stream, [&](phx_comm comm, phx_stream st, uint64_t* ticket) {
    return phx_shard_gather(comm, rank, st, p, axis, f, ticket);
  });
}

}  // namespace

void bind_comm(py::module_& module) {
  py::class_<Communicator, std::shared_ptr<Communicator>>(module, "Communicator")
      .def(py::init<const ContextPtr&, const std::vector<size_t>&, uint32_t>())
      .def_property_readonly("ranks", [](const Communicator& self) { return self.ranks; })
      .def_property_readonly("closed",
                             [](const Communicator& self) { return self.comm == nullptr; })
      .def_property_readonly("context", [](const Communicator& self) { return self.owner; })
      // A lambda taking a reference: pybind11 passes None as null to a member function
      // pointer's self, and refuses it for a reference.
      .def("close", [](Communicator& self) { self.close(); })
      .def("_all_reduce", &all_reduce)
      .def("all_gather", &all_gather)
      .def("_reduce_scatter", &reduce_scatter)
      .def("broadcast", &broadcast)
      .def("send", &send)
      .def("recv", &recv)
      .def("shard_scatter", &shard_scatter)
      .def("shard_gather", &shard_gather);
}

}  // namespace phx_python
