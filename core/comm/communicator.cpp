#include "communicator.h"

#include "rendezvous.h"
#include "transport_collectives.h"

namespace phx::comm {

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce:
      return "all_reduce";
    case Kind::kAllGather:
      return "all_gather";
    case Kind::kReduceScatter:
      return "reduce_scatter";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kMessage:
      return "send_recv";
    case Kind::kScatter:
      return "shard_scatter";
  }
  return "collective";
}

std::string Terms::text() const {
  static constexpr const char* kOps[] = {"sum", "max", "min", "mean"};
  std::string text = kind == Kind::kAllGather && blocks > 1 ? "shard_gather" : kind_name(kind);
  if (kind == Kind::kAllReduce || kind == Kind::kReduceScatter)
    text += std::string(" ") + (op >= 0 && op < 4 ? kOps[op] : "?") + " of";
  text += std::string(" ") + phx_dtype_name(dtype) + ", " + std::to_string(bytes) + " bytes";
  if (kind == Kind::kBroadcast || kind == Kind::kScatter)
    text += " from rank " + std::to_string(root);
  if (blocks > 1) text += " in " + std::to_string(blocks) + " blocks per rank";
  return text;
}

CommTable& comm_table() {
  static CommTable table;
  return table;
}

Communicator::~Communicator() {
  comm_table().remove(handle);
  for (auto& [index, rendezvous] : collectives_) rendezvous->abandon();
  for (auto& [key, rendezvous] : messages_) rendezvous->abandon();
}

void keep_collective_record(const Part& part, uint64_t ticket, const Terms& terms, size_t ranks,
                            uint64_t start_ns, uint64_t end_ns, uint64_t estimated_ns) {
  ProfileEntry record;
  record.ticket = ticket;
  record.collective = kind_name(terms.kind);
  record.signature = terms.text() + " over " + std::to_string(ranks) + " ranks";
  record.start_ns = start_ns;
  record.host_time_ns = end_ns - start_ns;
  record.bytes = terms.bytes;
  record.plugin.struct_size = sizeof record.plugin;
  if (estimated_ns != 0) {
    record.plugin.metrics[0] = {"estimated_time_ns", static_cast<double>(estimated_ns)};
    record.plugin.metric_count = 1;
  }
  part.stream->add_finished_record(std::move(record));
}

uint64_t Communicator::queue(size_t rank, const Terms& terms, const Part& part) {
  std::lock_guard lock(mutex_);
  if (transport) {
    // One at a time, in this process's call order, which every process shares.
    const uint64_t number = transport_calls_;
    const uint64_t ticket = part.stream->hold_host_work([link = transport, number, terms,
                                                         part](uint64_t ticket) {
      const uint64_t start_ns = trace::now_ns();
      link->run_in_turn(number, terms, part);
      if (part.stream->keeps_records())
        keep_collective_record(part, ticket, terms, link->ranks(), start_ns, trace::now_ns(), 0);
    });
    ++transport_calls_;
    return ticket;
  }
  if (collectives_called_.empty()) collectives_called_.assign(devices.size(), 0);
  // The rendezvous this call joins, found or made; made ones are dropped again on refusal.
  std::shared_ptr<Rendezvous>* open = nullptr;
  uint64_t* calls = nullptr;  // the calls of this kind the rank (or pair) has made
  size_t slot = rank;
  std::function<void()> forget;
  if (terms.kind == Kind::kMessage) {
    const bool sending = rank == terms.root;
    auto& [sent, received] = messages_called_[{terms.root, terms.to}];
    calls = sending ? &sent : &received;
    const auto key = std::tuple(terms.root, terms.to, *calls);
    open = &messages_[key];
    if (!*open)
      *open = std::make_shared<Rendezvous>(std::vector<size_t>{terms.root, terms.to}, timeout,
                                           "message " + std::to_string(*calls) + " from rank " +
                                               std::to_string(terms.root) + " to rank " +
                                               std::to_string(terms.to));
    slot = sending ? 0 : 1;
    forget = [this, key] { messages_.erase(key); };
  } else {
    calls = &collectives_called_[rank];
    const uint64_t number = *calls;
    open = &collectives_[number];
    if (!*open) {
      std::vector<size_t> ranks(devices.size());
      for (size_t r = 0; r < ranks.size(); ++r) ranks[r] = r;
      *open = std::make_shared<Rendezvous>(std::move(ranks), timeout,
                                           "collective " + std::to_string(number));
    }
    forget = [this, number] { collectives_.erase(number); };
  }
  const std::shared_ptr<Rendezvous> rendezvous = *open;
  if (!rendezvous->add(slot, terms, part)) {
    if (rendezvous->empty()) forget();
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "rank " + std::to_string(rank) +
             "'s stream is the stream of another rank of the same collective (it would wait "
             "for itself)");
  }
  const uint64_t ticket = part.stream->hold_host_work(
      [rendezvous, slot](uint64_t ticket) { rendezvous->join(slot, ticket); });
  ++*calls;
  if (rendezvous->complete()) forget();
  return ticket;
}

}  // namespace phx::comm
