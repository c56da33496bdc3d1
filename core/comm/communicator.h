// Communicators within one process (comm.h): ranks on devices of a context, and the
// meeting points where the workers of the ranks' streams run each collective together.
#pragma once

#include <phynexus/phynexus.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "context.h"
#include "handles.h"

namespace phx::comm {

// kAllGather with blocks > 1 is phx_shard_gather; kScatter is phx_shard_scatter.
enum class Kind { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kMessage, kScatter };
const char* kind_name(Kind kind);  // "all_reduce"

// What every rank of a collective must agree on, as each rank's call describes it.
struct Terms {
  Kind kind = Kind::kAllReduce;
  phx_dtype dtype = PHX_DTYPE_INVALID;
  // The whole buffer the collective is about, as phx_plugin_api.collective_estimate
  // counts it: all-reduce's and broadcast's tensor, all-gather's result, reduce-scatter's
  // input, the message, the scattered tensor.
  uint64_t bytes = 0;
  // Gathers and scatters along an axis: each rank's part is this many equal blocks (the
  // product of the dimensions before the axis), and block i of rank r's part is block
  // i * ranks + r of the whole. 1: the parts are joined end to end.
  uint64_t blocks = 1;
  int op = PHX_REDUCE_SUM;  // reductions only
  size_t root = 0;          // broadcast's and scatter's root, a message's sender
  size_t to = 0;            // a message's receiver

  bool operator==(const Terms&) const = default;
  std::string text() const;  // "all_reduce sum of f32, 4096 bytes"
};

// One rank's part: its stream, and the tensors it gives and receives (null where its
// role has none; broadcast's tensor is both).
struct Part {
  Stream* stream = nullptr;
  const Tensor* send = nullptr;
  const Tensor* recv = nullptr;
};

class Rendezvous;
class TransportLink;

// Calls fn(part_offset, whole_offset, size) for each piece of the bytes [offset, offset +
// size) of rank's part that is contiguous in the whole, under terms.blocks.
template <typename Fn>
void for_each_block_piece(const Terms& terms, size_t ranks, size_t rank, uint64_t offset,
                          uint64_t size, Fn&& fn) {
  const uint64_t part_bytes = terms.bytes / ranks, block = part_bytes / terms.blocks;
  for (uint64_t at = offset; at < offset + size;) {
    const uint64_t index = at / block, within = at % block;
    const uint64_t piece = std::min(block - within, offset + size - at);
    fn(at, (index * ranks + rank) * block + within, piece);
    at += piece;
  }
}

// Keeps the profile record of rank's part of a collective on its stream, with the model's
// time when there is one (0: none).
void keep_collective_record(const Part& part, uint64_t ticket, const Terms& terms, size_t ranks,
                            uint64_t start_ns, uint64_t end_ns, uint64_t estimated_ns);

struct Communicator : ContextObject {
  ~Communicator() override;  // fails the collectives still missing ranks

  // By rank; over a transport, only this process's rank has one (the others are null).
  std::vector<Device*> devices;
  std::chrono::milliseconds timeout{60000};
  // Over a transport (phx_comm_create_transport): this process's rank, and the link its
  // queued collectives share; null for an in-process communicator.
  std::shared_ptr<TransportLink> transport;

  // Queues rank's part of its next collective on the part's stream and returns the
  // stream's ticket: for a message (terms.kind kMessage), of the next message from
  // terms.root to terms.to. Throws INVALID_ARGUMENT, changing nothing,
  // when another rank of that collective uses the same stream.
  uint64_t queue(size_t rank, const Terms& terms, const Part& part);

 private:
  std::mutex mutex_;
  // Collectives and messages that still miss a rank's part; a rendezvous leaves once
  // every part is queued, and lives on in the held work of the streams.
  std::vector<uint64_t> collectives_called_;  // per rank
  uint64_t transport_calls_ = 0;              // this process's, over a transport
  std::map<uint64_t, std::shared_ptr<Rendezvous>> collectives_;
  // By (sender, receiver): messages sent and received so far, and the open ones by number.
  std::map<std::pair<size_t, size_t>, std::pair<uint64_t, uint64_t>> messages_called_;
  std::map<std::tuple<size_t, size_t, uint64_t>, std::shared_ptr<Rendezvous>> messages_;
};

using CommTable = HandleTable<Communicator, 0xc8>;
CommTable& comm_table();

}  // namespace phx::comm
