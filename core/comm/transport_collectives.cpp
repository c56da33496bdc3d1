#include "transport_collectives.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "reduction.h"
#include "transfer.h"

namespace phx::comm {

namespace {

// What each rank's call said, exchanged before a collective so that ranks that disagree
// fail together instead of exchanging mismatched bytes. Fixed width: it crosses
// processes that may be built apart.
struct TermsRecord {
  uint32_t kind, dtype;
  uint64_t bytes;
  int32_t op;
  uint32_t pad;
  uint64_t root, blocks;

  explicit TermsRecord(const Terms& terms)
      : kind(static_cast<uint32_t>(terms.kind)),
        dtype(static_cast<uint32_t>(terms.dtype)),
        bytes(terms.bytes),
        op(terms.op),
        pad(0),
        root(terms.root),
        blocks(terms.blocks) {}
  TermsRecord() = default;
  bool operator==(const TermsRecord&) const = default;

  std::string text() const {
    Terms terms;
    terms.kind = static_cast<Kind>(kind);
    terms.dtype = static_cast<phx_dtype>(dtype);
    terms.bytes = bytes;
    terms.op = op;
    terms.root = static_cast<size_t>(root);
    terms.blocks = blocks;
    return terms.text();
  }
};

}  // namespace

TransportLink::~TransportLink() {
  if (owned_ && transport_.destroy != nullptr) transport_.destroy(transport_.user_data);
}

template <typename Call>
void TransportLink::call(const char* what, Call&& entry) {
  const phx_status status = entry();
  if (status != PHX_STATUS_OK)
    fail(status, std::string("the transport's ") + what + " failed: " + phx_last_error());
}

char* TransportLink::scratch(size_t bytes) {
  if (scratch_bytes_ < bytes) {
    scratch_.reset();  // the old one first: the two need not both fit
    scratch_.reset(new char[bytes]);
    scratch_bytes_ = bytes;
  }
  return scratch_.get();
}

void TransportLink::run_in_turn(uint64_t number, const Terms& terms, const Part& part) {
  std::unique_lock lock(mutex_);
  turn_changed_.wait(lock, [&] { return next_ == number; });
  lock.unlock();
  // The next collective runs whatever this one does: the processes stay in step.
  struct NextTurn {
    TransportLink& link;
    ~NextTurn() {
      std::lock_guard lock(link.mutex_);
      ++link.next_;
      link.turn_changed_.notify_all();
    }
  } next_turn{*this};
  run(terms, part);
}

namespace {

// A tensor's bytes in host memory for the length of one collective: in place when its
// device's memory is the host's (no copy at all), else a staging buffer read in on demand
// and written back by store().
class HostBytes {
 public:
  HostBytes(const Tensor& tensor, bool load) : tensor_(tensor), address_(host_address(tensor)) {
    if (address_ != nullptr) return;
    staging_.reset(new char[tensor.byte_size]);  // uninitialized: it is filled before use
    if (load) read_to_host(tensor, staging_.get());
  }
  char* data() { return address_ != nullptr ? address_ : staging_.get(); }
  void store() {
    if (address_ == nullptr) write_from_host(tensor_, staging_.get());
  }

 private:
  const Tensor& tensor_;
  char* const address_;
  std::unique_ptr<char[]> staging_;
};

std::unique_ptr<char[]> uninitialized(size_t bytes) {
  return std::unique_ptr<char[]>(new char[bytes]);
}

}  // namespace

void TransportLink::run(const Terms& terms, const Part& part) {
  const size_t ranks = transport_.ranks, rank = transport_.rank;
  void* const user = transport_.user_data;
  if (terms.kind == Kind::kMessage) {
    if (part.send != nullptr) {
      HostBytes bytes(*part.send, true);
      call("send", [&] { return transport_.send(user, bytes.data(), terms.bytes, terms.to); });
    } else {
      HostBytes bytes(*part.recv, false);
      call("recv", [&] { return transport_.recv(user, bytes.data(), terms.bytes, terms.root); });
      bytes.store();
    }
    return;
  }
  const TermsRecord mine(terms);
  std::vector<TermsRecord> all(ranks);
  call("all_gather", [&] { return transport_.all_gather(user, &mine, all.data(), sizeof mine); });
  for (size_t r = 0; r < ranks; ++r)
    if (!(all[r] == mine))
      fail(PHX_STATUS_INVALID_ARGUMENT, "rank " + std::to_string(r) + " called " + all[r].text() +
                                            ", rank " + std::to_string(rank) + " " + mine.text());

  const size_t element = phx_dtype_size(terms.dtype);
  // Each rank reduces one part of every rank's buffer, in rank order, with the
  // in-process communicator's arithmetic: all_to_all brings it the parts.
  auto reduce_parts = [&](const char* pieces, size_t count, char* out) {
    const Reduction reduction(terms.dtype, static_cast<phx_reduce_op>(terms.op), ranks);
    std::unique_ptr<char[]> accumulator;
    char* acc = out;
    if (!reduction.accumulator_is_result()) {
      accumulator = uninitialized(reduction.accumulator_bytes(count));
      acc = accumulator.get();
    }
    const size_t part_bytes = count * element;
    if (ranks == 1)
      reduction.start(acc, pieces, count);
    else
      reduction.start(acc, pieces, pieces + part_bytes, count);
    for (size_t r = 2; r < ranks; ++r) reduction.add(acc, pieces + r * part_bytes, count);
    if (acc != out) reduction.finish(acc, out, count);
  };
  switch (terms.kind) {
    case Kind::kAllReduce: {
      // Parts of equal length: a buffer that does not divide is padded with zeros.
      const size_t count = terms.bytes / element;
      const size_t part_bytes = (count + ranks - 1) / ranks * element;
      const size_t padded_bytes = ranks * part_bytes;
      HostBytes send(*part.send, true);
      // The received parts, the reduced one, and the padded buffer when one is needed.
      const bool pads = padded_bytes != terms.bytes;
      char* const pieces = scratch(2 * padded_bytes + part_bytes);
      char* const reduced = pieces + padded_bytes;
      char* const padded = pads ? reduced + part_bytes : nullptr;
      const char* outgoing = send.data();
      if (pads) {
        std::memcpy(padded, send.data(), terms.bytes);
        std::memset(padded + terms.bytes, 0, padded_bytes - terms.bytes);
        outgoing = padded;
      }
      call("all_to_all", [&] { return transport_.all_to_all(user, outgoing, pieces, part_bytes); });
      reduce_parts(pieces, part_bytes / element, reduced);
      HostBytes recv(*part.recv, false);
      char* gathered = pads ? padded : recv.data();
      call("all_gather",
           [&] { return transport_.all_gather(user, reduced, gathered, part_bytes); });
      if (gathered != recv.data()) std::memcpy(recv.data(), gathered, terms.bytes);
      recv.store();
      break;
    }
    case Kind::kReduceScatter: {
      const size_t part_bytes = part.recv->byte_size;
      HostBytes send(*part.send, true), recv(*part.recv, false);
      char* const pieces = scratch(terms.bytes);
      call("all_to_all",
           [&] { return transport_.all_to_all(user, send.data(), pieces, part_bytes); });
      reduce_parts(pieces, part_bytes / element, recv.data());
      recv.store();
      break;
    }
    case Kind::kAllGather: {
      const size_t part_bytes = part.send->byte_size;
      HostBytes send(*part.send, true), recv(*part.recv, false);
      if (terms.blocks == 1) {
        call("all_gather",
             [&] { return transport_.all_gather(user, send.data(), recv.data(), part_bytes); });
      } else {
        // Rank-major from the transport; block-interleaved along the axis.
        const auto gathered = uninitialized(terms.bytes);
        call("all_gather",
             [&] { return transport_.all_gather(user, send.data(), gathered.get(), part_bytes); });
        for (size_t r = 0; r < ranks; ++r)
          for_each_block_piece(
              terms, ranks, r, 0, part_bytes, [&](uint64_t at, uint64_t whole_at, uint64_t piece) {
                std::memcpy(recv.data() + whole_at, gathered.get() + r * part_bytes + at, piece);
              });
      }
      recv.store();
      break;
    }
    case Kind::kBroadcast: {
      HostBytes bytes(*part.recv, rank == terms.root);
      call("broadcast",
           [&] { return transport_.broadcast(user, bytes.data(), terms.bytes, terms.root); });
      if (rank != terms.root) bytes.store();
      break;
    }
    case Kind::kScatter: {
      const size_t part_bytes = part.recv->byte_size;
      HostBytes mine_part(*part.recv, false);
      if (rank != terms.root) {
        call("recv",
             [&] { return transport_.recv(user, mine_part.data(), part_bytes, terms.root); });
        mine_part.store();
        break;
      }
      HostBytes whole(*part.send, true);
      const auto bytes = uninitialized(part_bytes);
      for (size_t r = 0; r < ranks; ++r) {
        char* into = r == rank ? mine_part.data() : bytes.get();
        for_each_block_piece(terms, ranks, r, 0, part_bytes,
                             [&](uint64_t at, uint64_t whole_at, uint64_t piece) {
                               std::memcpy(into + at, whole.data() + whole_at, piece);
                             });
        if (r != rank)
          call("send", [&] { return transport_.send(user, bytes.get(), part_bytes, r); });
      }
      mine_part.store();
      break;
    }
    case Kind::kMessage:  // above
      break;
  }
}

}  // namespace phx::comm
