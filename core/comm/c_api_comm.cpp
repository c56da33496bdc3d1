// The C API of events and communicators (comm.h): checks every argument, then queues.
#include <phx/abi_structs.h>
#include <phynexus/phynexus.h>

#include "communicator.h"
#include "context.h"
#include "errors.h"
#include "event.h"
#include "reduction.h"
#include "transport_collectives.h"

using namespace phx;
using namespace phx::comm;

namespace {

Event& lookup_event(phx_event handle) {
  return lookup_object<Event>(event_table(), handle, "event");
}

Communicator& lookup_comm(phx_comm handle) {
  return lookup_object<Communicator>(comm_table(), handle, "communicator");
}

// The stream of rank's part, checked to be on rank's device.
Stream& rank_stream(const Communicator& comm, size_t rank, phx_stream handle) {
  if (rank >= comm.devices.size())
    fail(PHX_STATUS_INVALID_ARGUMENT, "rank " + std::to_string(rank) + " is out of range (" +
                                          std::to_string(comm.devices.size()) + " ranks)");
  if (comm.devices[rank] == nullptr)
    fail(PHX_STATUS_INVALID_ARGUMENT, "rank " + std::to_string(rank) +
                                          " is another process's (this one holds rank " +
                                          std::to_string(comm.transport->rank()) + ")");
  Stream& stream = lookup(handle);
  if (stream.context != comm.context)
    fail(PHX_STATUS_INVALID_ARGUMENT, "the stream belongs to another context");
  if (stream.device != comm.devices[rank])
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "the stream is on device " + std::to_string(stream.device->index) + ", rank " +
             std::to_string(rank) + " on device " + std::to_string(comm.devices[rank]->index));
  return stream;
}

const Tensor& rank_tensor(const Communicator& comm, size_t rank, phx_tensor handle,
                          const char* role) {
  if (handle == nullptr) fail(PHX_STATUS_INVALID_ARGUMENT, std::string(role) + " is null");
  const Tensor& tensor = lookup(handle);
  if (tensor.context != comm.context)
    fail(PHX_STATUS_INVALID_ARGUMENT, std::string(role) + " belongs to another context");
  if (tensor.device != comm.devices[rank])
    fail(PHX_STATUS_INVALID_ARGUMENT,
         std::string(role) + " is on device " + std::to_string(tensor.device->index) + ", rank " +
             std::to_string(rank) + " on device " + std::to_string(comm.devices[rank]->index));
  return tensor;
}

void require_same_dtype(const Tensor& send, const Tensor& recv) {
  if (send.dtype != recv.dtype)
    fail(PHX_STATUS_INVALID_ARGUMENT, std::string("send is ") + phx_dtype_name(send.dtype) +
                                          ", recv " + phx_dtype_name(recv.dtype));
}

// recv's byte size must be times send's (all_gather), or send's times recv's.
void require_sizes(uint64_t whole, uint64_t part, size_t times, const char* whole_name,
                   const char* part_name) {
  uint64_t expected = 0;
  if (__builtin_mul_overflow(part, uint64_t{times}, &expected) || expected != whole)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         std::string(whole_name) + " has " + std::to_string(whole) + " bytes; it must have " +
             std::to_string(times) + " (ranks) times " + part_name + "'s " + std::to_string(part));
}

// The blocks a part split along axis is made of (comm.h, "Sharding"): the product of the
// dimensions before axis, after checking that the part has that axis.
uint64_t part_blocks(const Tensor& part, size_t axis) {
  if (axis >= part.rank)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "axis " + std::to_string(axis) + " is past the part's rank " + std::to_string(part.rank));
  uint64_t blocks = 1;
  for (size_t d = 0; d < axis; ++d) blocks *= static_cast<uint64_t>(part.shape[d]);
  return blocks;
}

// part_blocks, after checking that whole is ranks parts of part's shape along axis.
uint64_t checked_blocks(const Tensor& whole, const Tensor& part, size_t axis, size_t ranks) {
  require_same_dtype(part, whole);
  const uint64_t blocks = part_blocks(part, axis);
  bool fits = whole.rank == part.rank;
  for (size_t d = 0; fits && d < part.rank; ++d)
    fits =
        whole.shape[d] == (d == axis ? part.shape[d] * static_cast<int64_t>(ranks) : part.shape[d]);
  if (!fits)
    fail(PHX_STATUS_INVALID_ARGUMENT, "the whole tensor is not " + std::to_string(ranks) +
                                          " parts along axis " + std::to_string(axis) +
                                          " (every other dimension equal to the part's)");
  return blocks;
}

int checked_reduce_op(const phx_reduce_op& op, phx_dtype dtype) {
  const int value = enum_value(op);
  if (std::string why = reduction_refusal(dtype, value); !why.empty())
    fail(PHX_STATUS_INVALID_ARGUMENT, why);
  return value;
}

void give_ticket(uint64_t ticket, uint64_t* out_ticket) {
  if (out_ticket != nullptr) *out_ticket = ticket;
}

}  // namespace

extern "C" {

PHX_API phx_status phx_event_record(phx_stream handle, uint64_t ticket, phx_event* out_event) {
  return guard(__func__, [&] {
    Stream& stream = lookup(handle);
    require_out(out_event, "out_event");
    if (ticket != 0) stream.check_issued(ticket);
    auto event = std::make_unique<Event>();
    event->link = stream.link;
    event->ticket = ticket == 0 ? stream.last_ticket : ticket;
    if (event->ticket != 0 && stream.keeps_records() && stream.context->tracer.active()) {
      const uint64_t id = trace::Writer::new_flow_ids(1);
      if (stream.add_flow({.id = id, .name = "event", .leaves = true, .ticket = event->ticket}))
        event->flow_id = id;
    }
    *out_event = reinterpret_cast<phx_event>(
        register_object(*stream.context, std::move(event), event_table(), "events"));
  });
}

PHX_API phx_status phx_event_destroy(phx_event handle) {
  return guard(__func__, [&] {
    Event& event = lookup_event(handle);
    event.context->destroy_object(event);
  });
}

PHX_API phx_status phx_event_query(phx_event handle, int* out_done) {
  return guard(__func__, [&] {
    const Event& event = lookup_event(handle);
    require_out(out_done, "out_done");
    *out_done = event.finished() ? 1 : 0;
  });
}

PHX_API phx_status phx_event_synchronize(phx_event handle) {
  return guard(__func__, [&] { lookup_event(handle).wait(); });
}

PHX_API phx_status phx_stream_wait_event(phx_stream stream_handle, phx_event event_handle) {
  return guard(__func__, [&] {
    Stream& stream = lookup(stream_handle);
    const Event& event = lookup_event(event_handle);
    if (event.context != stream.context)
      fail(PHX_STATUS_INVALID_ARGUMENT, "the event belongs to another context");
    if (event.flow_id != 0 && stream.keeps_records() && stream.context->tracer.active())
      stream.add_flow({.id = event.flow_id, .name = "event", .after = true});
    if (event.finished()) return;
    stream.hold_until(
        [link = event.link, ticket = event.ticket] { wait_until_finished(*link, ticket); });
  });
}

PHX_API phx_status phx_comm_create(phx_context handle, const size_t* devices, size_t ranks,
                                   const phx_comm_options* user_options, phx_comm* out_comm) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_comm, "out_comm");
    require(devices != nullptr, "devices is null");
    constexpr size_t kMaxRanks = 4096;
    if (ranks < 1 || ranks > kMaxRanks)
      fail(PHX_STATUS_INVALID_ARGUMENT,
           std::to_string(ranks) + " ranks; a communicator has 1 to 4096");
    const phx_comm_options options =
        read_struct(user_options, phx_comm_options PHX_COMM_OPTIONS_INIT, "options");
    auto comm = std::make_unique<Communicator>();
    for (size_t r = 0; r < ranks; ++r) comm->devices.push_back(&context.device(devices[r]));
    if (options.timeout_ms != 0) comm->timeout = std::chrono::milliseconds(options.timeout_ms);
    *out_comm = reinterpret_cast<phx_comm>(
        register_object(context, std::move(comm), comm_table(), "communicators"));
  });
}

PHX_API phx_status phx_comm_destroy(phx_comm handle) {
  return guard(__func__, [&] {
    Communicator& comm = lookup_comm(handle);
    comm.context->destroy_object(comm);
  });
}

PHX_API phx_status phx_comm_ranks(phx_comm handle, size_t* out_ranks) {
  return guard(__func__, [&] {
    const Communicator& comm = lookup_comm(handle);
    require_out(out_ranks, "out_ranks");
    *out_ranks = comm.devices.size();
  });
}

PHX_API phx_status phx_all_reduce(phx_comm handle, size_t rank, phx_stream stream_handle,
                                  phx_tensor send_handle, phx_tensor recv_handle, phx_reduce_op op,
                                  uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Communicator& comm = lookup_comm(handle);
    Stream& stream = rank_stream(comm, rank, stream_handle);
    const Tensor& send = rank_tensor(comm, rank, send_handle, "send");
    const Tensor& recv = rank_tensor(comm, rank, recv_handle, "recv");
    require_same_dtype(send, recv);
    require_sizes(recv.byte_size, send.byte_size, 1, "recv", "send");
    Terms terms{Kind::kAllReduce, send.dtype, send.byte_size};
    terms.op = checked_reduce_op(op, send.dtype);
    give_ticket(comm.queue(rank, terms, {&stream, &send, &recv}), out_ticket);
  });
}

PHX_API phx_status phx_all_gather(phx_comm handle, size_t rank, phx_stream stream_handle,
                                  phx_tensor send_handle, phx_tensor recv_handle,
                                  uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Communicator& comm = lookup_comm(handle);
    Stream& stream = rank_stream(comm, rank, stream_handle);
    const Tensor& send = rank_tensor(comm, rank, send_handle, "send");
    const Tensor& recv = rank_tensor(comm, rank, recv_handle, "recv");
    require_same_dtype(send, recv);
    require_sizes(recv.byte_size, send.byte_size, comm.devices.size(), "recv", "send");
    const Terms terms{Kind::kAllGather, send.dtype, recv.byte_size};
    give_ticket(comm.queue(rank, terms, {&stream, &send, &recv}), out_ticket);
  });
}

PHX_API phx_status phx_reduce_scatter(phx_comm handle, size_t rank, phx_stream stream_handle,
                                      phx_tensor send_handle, phx_tensor recv_handle,
                                      phx_reduce_op op, uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Communicator& comm = lookup_comm(handle);
    Stream& stream = rank_stream(comm, rank, stream_handle);
    const Tensor& send = rank_tensor(comm, rank, send_handle, "send");
    const Tensor& recv = rank_tensor(comm, rank, recv_handle, "recv");
    require_same_dtype(send, recv);
    require_sizes(send.byte_size, recv.byte_size, comm.devices.size(), "send", "recv");
    Terms terms{Kind::kReduceScatter, send.dtype, send.byte_size};
    terms.op = checked_reduce_op(op, send.dtype);
    give_ticket(comm.queue(rank, terms, {&stream, &send, &recv}), out_ticket);
  });
}

PHX_API phx_status phx_broadcast(phx_comm handle, size_t rank, phx_stream stream_handle,
                                 phx_tensor tensor_handle, size_t root, uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Communicator& comm = lookup_comm(handle);
    Stream& stream = rank_stream(comm, rank, stream_handle);
    const Tensor& tensor = rank_tensor(comm, rank, tensor_handle, "tensor");
    if (root >= comm.devices.size())
      fail(PHX_STATUS_INVALID_ARGUMENT, "root " + std::to_string(root) + " is out of range (" +
                                            std::to_string(comm.devices.size()) + " ranks)");
    Terms terms{Kind::kBroadcast, tensor.dtype, tensor.byte_size};
    terms.root = root;
    give_ticket(comm.queue(rank, terms, {&stream, &tensor, &tensor}), out_ticket);
  });
}

namespace {
// rank's half of a message between rank and peer: sending, or receiving.
void queue_message(phx_comm handle, size_t rank, phx_stream stream_handle, phx_tensor tensor_handle,
                   size_t peer, bool sending, uint64_t* out_ticket) {
  Communicator& comm = lookup_comm(handle);
  Stream& stream = rank_stream(comm, rank, stream_handle);
  const Tensor& tensor = rank_tensor(comm, rank, tensor_handle, "tensor");
  if (peer >= comm.devices.size())
    fail(PHX_STATUS_INVALID_ARGUMENT, "peer " + std::to_string(peer) + " is out of range (" +
                                          std::to_string(comm.devices.size()) + " ranks)");
  if (peer == rank)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "rank " + std::to_string(rank) + " names itself as its peer (copy instead)");
  Terms terms{Kind::kMessage, tensor.dtype, tensor.byte_size};
  terms.root = sending ? rank : peer;
  terms.to = sending ? peer : rank;
  const Part part{&stream, sending ? &tensor : nullptr, sending ? nullptr : &tensor};
  give_ticket(comm.queue(rank, terms, part), out_ticket);
}
}  // namespace

PHX_API phx_status phx_send(phx_comm handle, size_t rank, phx_stream stream, phx_tensor tensor,
                            size_t peer, uint64_t* out_ticket) {
  return guard(__func__,
               [&] { queue_message(handle, rank, stream, tensor, peer, true, out_ticket); });
}

PHX_API phx_status phx_recv(phx_comm handle, size_t rank, phx_stream stream, phx_tensor tensor,
                            size_t peer, uint64_t* out_ticket) {
  return guard(__func__,
               [&] { queue_message(handle, rank, stream, tensor, peer, false, out_ticket); });
}

PHX_API phx_status phx_shard_scatter(phx_comm handle, size_t rank, phx_stream stream_handle,
                                     phx_tensor full_handle, size_t root, size_t axis,
                                     phx_tensor part_handle, uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Communicator& comm = lookup_comm(handle);
    Stream& stream = rank_stream(comm, rank, stream_handle);
    const Tensor& part = rank_tensor(comm, rank, part_handle, "part");
    if (root >= comm.devices.size())
      fail(PHX_STATUS_INVALID_ARGUMENT, "root " + std::to_string(root) + " is out of range (" +
                                            std::to_string(comm.devices.size()) + " ranks)");
    Terms terms{Kind::kScatter, part.dtype, part.byte_size * comm.devices.size()};
    terms.root = root;
    const Tensor* full = nullptr;
    if (rank == root) {
      full = &rank_tensor(comm, rank, full_handle, "full");
      terms.blocks = checked_blocks(*full, part, axis, comm.devices.size());
    } else {
      terms.blocks = part_blocks(part, axis);
    }
    give_ticket(comm.queue(rank, terms, {&stream, full, &part}), out_ticket);
  });
}

PHX_API phx_status phx_shard_gather(phx_comm handle, size_t rank, phx_stream stream_handle,
                                    phx_tensor part_handle, size_t axis, phx_tensor full_handle,
                                    uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Communicator& comm = lookup_comm(handle);
    Stream& stream = rank_stream(comm, rank, stream_handle);
    const Tensor& part = rank_tensor(comm, rank, part_handle, "part");
    const Tensor& full = rank_tensor(comm, rank, full_handle, "full");
    Terms terms{Kind::kAllGather, part.dtype, full.byte_size};
    terms.blocks = checked_blocks(full, part, axis, comm.devices.size());
    give_ticket(comm.queue(rank, terms, {&stream, &part, &full}), out_ticket);
  });
}

PHX_API phx_status phx_comm_create_transport(phx_context handle, size_t device,
                                             const phx_comm_transport* transport,
                                             phx_comm* out_comm) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_comm, "out_comm");
    require(transport != nullptr, "transport is null");
    const phx_comm_transport copy = read_struct(transport, phx_comm_transport{}, "transport");
    require(copy.all_gather != nullptr && copy.all_to_all != nullptr && copy.broadcast != nullptr &&
                copy.send != nullptr && copy.recv != nullptr,
            "the transport lacks an entry (all_gather, all_to_all, broadcast, send, recv)");
    if (copy.ranks < 1 || copy.rank >= copy.ranks)
      fail(PHX_STATUS_INVALID_ARGUMENT,
           "rank " + std::to_string(copy.rank) + " of " + std::to_string(copy.ranks) + " ranks");
    Device& own = context.device(device);
    auto comm = std::make_unique<Communicator>();
    comm->devices.assign(copy.ranks, nullptr);
    comm->devices[copy.rank] = &own;
    comm->transport = std::make_shared<TransportLink>(copy);
    const std::shared_ptr<TransportLink> link = comm->transport;
    const uintptr_t registered =
        register_object(context, std::move(comm), comm_table(), "communicators");
    // Only now is the transport the communicator's to destroy: a failure above left it the
    // caller's.
    link->take_ownership();
    *out_comm = reinterpret_cast<phx_comm>(registered);
  });
}

}  // extern "C"
