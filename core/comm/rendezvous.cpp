#include "rendezvous.h"

#include <algorithm>
#include <cstring>

#include "reduction.h"
#include "transfer.h"

namespace phx::comm {

namespace {

// The bytes one worker moves at a time: a reduction's accumulator stays in the L1 cache.
// bench_comm's 64 MiB all-reduce over 4 ranks: 32 KiB 0.43-0.49 of memcpy's bandwidth,
// 8 KiB 0.36-0.45, 128 KiB 0.34-0.41, 512 KiB 0.33 (2-core Xeon).
constexpr uint64_t kChunkBytes = 32 << 10;

// Gathers and scatters are split per rank's part, so that no chunk straddles two parts.
bool splits_per_part(Kind kind) {
  return kind == Kind::kAllGather || kind == Kind::kReduceScatter || kind == Kind::kScatter;
}

std::string slot_list(const std::vector<size_t>& ranks) {
  std::string text;
  for (size_t rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

}  // namespace

Rendezvous::Rendezvous(std::vector<size_t> rank_of_slot, std::chrono::milliseconds timeout,
                       std::string name)
    : rank_of_slot_(std::move(rank_of_slot)),
      timeout_(timeout),
      name_(std::move(name)),
      parts_(rank_of_slot_.size()),
      joined_slots_(rank_of_slot_.size(), false) {}

bool Rendezvous::add(size_t slot, const Terms& terms, const Part& part) {
  std::lock_guard lock(mutex_);
  for (const auto& other : parts_)
    if (other && other->stream == part.stream) return false;
  parts_[slot] = part;
  ++added_;
  if (!terms_) {
    terms_ = terms;
  } else if (!(*terms_ == terms) && state_ == State::kGathering) {
    fail_locked(PHX_STATUS_INVALID_ARGUMENT, "rank " + std::to_string(rank_of_slot_[slot]) +
                                                 " called " + terms.text() + ", another rank " +
                                                 terms_->text());
  }
  return true;
}

bool Rendezvous::complete() const {
  std::lock_guard lock(mutex_);
  return added_ == parts_.size();
}

bool Rendezvous::empty() const {
  std::lock_guard lock(mutex_);
  return added_ == 0;
}

void Rendezvous::abandon() {
  std::lock_guard lock(mutex_);
  if (added_ < parts_.size() && state_ == State::kGathering)
    fail_locked(PHX_STATUS_DEVICE_UNAVAILABLE, "its communicator was destroyed first");
}

void Rendezvous::fail_locked(phx_status status, std::string message) {
  state_ = State::kFailed;
  error_status_ = status;
  error_ = name_ + ": " + std::move(message);
  changed_.notify_all();
}

void Rendezvous::join(size_t slot, uint64_t ticket) {
  const uint64_t start_ns = trace::now_ns();
  if (terms_->kind == Kind::kMessage) {
    if (slot == 0)
      send(slot, ticket, start_ns);
    else
      receive(slot, ticket, start_ns);
    return;
  }
  std::unique_lock lock(mutex_);
  joined_slots_[slot] = true;
  if (++joined_ == parts_.size() && state_ == State::kGathering) {
    release_locked(slot);
    prepare_locked();
    state_ = State::kRunning;
    changed_.notify_all();
  }
  if (!changed_.wait_for(lock, timeout_, [&] { return state_ != State::kGathering; })) {
    std::vector<size_t> missing;
    for (size_t s = 0; s < parts_.size(); ++s)
      if (!joined_slots_[s]) missing.push_back(rank_of_slot_[s]);
    fail_locked(PHX_STATUS_DEVICE_UNAVAILABLE, "rank(s) " + slot_list(missing) +
                                                   " did not reach it within " +
                                                   std::to_string(timeout_.count()) + " ms");
  }
  if (state_ == State::kFailed) fail(error_status_, error_);
  lock.unlock();
  work();
  lock.lock();
  // A rank's results are written by every worker: none may go on before all are done.
  if (++done_ == parts_.size()) changed_.notify_all();
  changed_.wait(lock, [&] { return done_ == parts_.size(); });
  const Part part = *parts_[slot];
  lock.unlock();
  add_flows(slot, part, ticket);
  if (part.stream->keeps_records())
    keep_collective_record(part, ticket, *terms_, parts_.size(), start_ns, trace::now_ns(),
                           estimated_time_ns());
}

void Rendezvous::release_locked(size_t releasing_slot) {
  releasing_slot_ = releasing_slot;
  released_ns_ = trace::now_ns();
  const Stream& stream = *parts_[releasing_slot]->stream;
  if (stream.context->tracer.active()) flow_ids_ = trace::Writer::new_flow_ids(parts_.size());
}

void Rendezvous::add_flows(size_t slot, const Part& part, uint64_t ticket) const {
  if (flow_ids_ == 0 || !part.stream->keeps_records()) return;
  const char* name = kind_name(terms_->kind);
  if (slot != releasing_slot_) {
    part.stream->add_flow({.id = flow_ids_ + slot, .name = name, .ticket = ticket});
    return;
  }
  for (size_t other = 0; other < parts_.size(); ++other)
    if (other != slot)
      part.stream->add_flow({.id = flow_ids_ + other,
                             .name = name,
                             .leaves = true,
                             .ticket = ticket,
                             .departs_after_ns = released_ns_});
}

// A message's sender does not wait for its receiver: it leaves the bytes in host memory
// and goes on, as MPI's buffered sends do, so that ranks that each send, then receive, in
// a ring do not wait for each other in a circle.
void Rendezvous::send(size_t slot, uint64_t ticket, uint64_t start_ns) {
  const Part part = *parts_[slot];
  std::vector<char> staged(part.send->byte_size);
  read_to_host(*part.send, staged.data());
  {
    std::lock_guard lock(mutex_);
    staged_ = std::move(staged);
    joined_slots_[slot] = true;
    ++joined_;
    release_locked(slot);
    changed_.notify_all();
  }
  add_flows(slot, part, ticket);
  if (part.stream->keeps_records())
    keep_collective_record(part, ticket, *terms_, parts_.size(), start_ns, trace::now_ns(),
                           estimated_time_ns());
}

void Rendezvous::receive(size_t slot, uint64_t ticket, uint64_t start_ns) {
  std::unique_lock lock(mutex_);
  joined_slots_[slot] = true;
  if (!changed_.wait_for(lock, timeout_, [&] { return state_ == State::kFailed || joined_ > 0; }))
    fail_locked(PHX_STATUS_DEVICE_UNAVAILABLE, "rank " + std::to_string(rank_of_slot_[0]) +
                                                   " did not send it within " +
                                                   std::to_string(timeout_.count()) + " ms");
  if (state_ == State::kFailed) fail(error_status_, error_);
  const Part part = *parts_[slot];
  lock.unlock();
  write_from_host(*part.recv, staged_.data());
  add_flows(slot, part, ticket);
  if (part.stream->keeps_records())
    keep_collective_record(part, ticket, *terms_, parts_.size(), start_ns, trace::now_ns(),
                           estimated_time_ns());
}

void Rendezvous::prepare_locked() {
  for (const auto& part : parts_)
    for (const Tensor* tensor : {part->send, part->recv})
      if (tensor != nullptr) host_addresses_.emplace_back(tensor, host_address(*tensor));
  const uint64_t element = phx_dtype_size(terms_->dtype);
  chunk_bytes_ = std::max<uint64_t>(kChunkBytes / element, 1) * element;
  const bool per_part = splits_per_part(terms_->kind);
  const uint64_t span = per_part ? terms_->bytes / parts_.size() : terms_->bytes;
  chunks_per_span_ = static_cast<size_t>((span + chunk_bytes_ - 1) / chunk_bytes_);
  chunk_count_ = chunks_per_span_ * (per_part ? parts_.size() : 1);
}

void Rendezvous::work() {
  std::vector<char> in, acc, out;
  for (size_t chunk; (chunk = next_chunk_.fetch_add(1)) < chunk_count_;)
    run_chunk(chunk, in, acc, out);
}

void Rendezvous::run_chunk(size_t chunk, std::vector<char>& scratch_in,
                           std::vector<char>& scratch_acc, std::vector<char>& scratch_out) {
  const Terms& terms = *terms_;
  const size_t slots = parts_.size();
  const bool per_part = splits_per_part(terms.kind);
  const uint64_t span = per_part ? terms.bytes / slots : terms.bytes;
  const size_t owner = chunk / chunks_per_span_;  // the part a per-part chunk belongs to
  const uint64_t offset = (chunk % chunks_per_span_) * chunk_bytes_;
  const uint64_t size = std::min(chunk_bytes_, span - offset);

  auto reduce = [&](uint64_t from) {
    const Reduction reduction(terms.dtype, static_cast<phx_reduce_op>(terms.op), slots);
    const size_t count = size / phx_dtype_size(terms.dtype);
    scratch_acc.resize(reduction.accumulator_bytes(count));
    if (!reduction.accumulator_is_result()) scratch_out.resize(size);
    for (size_t s = 0; s < slots; ++s) {
      const void* values = view(*parts_[s]->send, from, size, scratch_in);
      if (s == 0)
        reduction.start(scratch_acc.data(), values, count);
      else
        reduction.add(scratch_acc.data(), values, count);
    }
    if (reduction.accumulator_is_result()) return scratch_acc.data();
    reduction.finish(scratch_acc.data(), scratch_out.data(), count);
    return scratch_out.data();
  };
  switch (terms.kind) {
    case Kind::kAllReduce: {
      const char* result = reduce(offset);
      // Each chunk starts at another rank: writes through a plugin take the tensor's lock,
      // and workers that all began with rank 0 would queue behind one another.
      for (size_t k = 0; k < slots; ++k)
        write(*parts_[(chunk + k) % slots]->recv, offset, size, result);
      break;
    }
    case Kind::kReduceScatter:
      write(*parts_[owner]->recv, offset, size, reduce(owner * span + offset));
      break;
    case Kind::kAllGather: {
      const char* part =
          static_cast<const char*>(view(*parts_[owner]->send, offset, size, scratch_in));
      for_each_block_piece(terms, slots, owner, offset, size,
                           [&](uint64_t at, uint64_t whole_at, uint64_t piece) {
                             for (const auto& other : parts_)
                               write(*other->recv, whole_at, piece, part + (at - offset));
                           });
      break;
    }
    case Kind::kScatter:
      for_each_block_piece(
          terms, slots, owner, offset, size, [&](uint64_t at, uint64_t whole_at, uint64_t piece) {
            const void* data = view(*parts_[terms.root]->send, whole_at, piece, scratch_in);
            write(*parts_[owner]->recv, at, piece, data);
          });
      break;
    case Kind::kBroadcast: {
      const void* data = view(*parts_[terms.root]->send, offset, size, scratch_in);
      for (size_t s = 0; s < slots; ++s)
        if (s != terms.root) write(*parts_[s]->recv, offset, size, data);
      break;
    }
    case Kind::kMessage:  // send and receive, above
      break;
  }
}

const void* Rendezvous::view(const Tensor& tensor, uint64_t offset, uint64_t size,
                             std::vector<char>& scratch) const {
  for (const auto& [known, address] : host_addresses_)
    if (known == &tensor && address != nullptr) return address + offset;
  scratch.resize(size);
  auto& plugin = *tensor.device->plugin;
  // Buffers are the plugin's to read one thread at a time: workers share the tensors.
  std::lock_guard lock(tensor.host_read_mutex);
  plugin.call("buffer_read", tensor.device->index, [&] {
    return plugin.api().buffer_read(plugin.instance(), tensor.buffer, tensor.offset + offset,
                                    scratch.data(), size);
  });
  return scratch.data();
}

void Rendezvous::write(const Tensor& tensor, uint64_t offset, uint64_t size,
                       const void* src) const {
  for (const auto& [known, address] : host_addresses_) {
    if (known == &tensor && address != nullptr) {
      if (address + offset != src) std::memcpy(address + offset, src, size);
      return;
    }
  }
  auto& plugin = *tensor.device->plugin;
  std::lock_guard lock(tensor.host_read_mutex);
  plugin.call("buffer_write", tensor.device->index, [&] {
    return plugin.api().buffer_write(plugin.instance(), tensor.buffer, tensor.offset + offset, src,
                                     size);
  });
}

uint64_t Rendezvous::estimated_time_ns() const {
  Plugin& plugin = *parts_[0]->stream->device->plugin;
  if (plugin.api().collective_estimate == nullptr) return 0;
  std::vector<uint32_t> devices;
  for (const auto& part : parts_) {
    const Device& device = *part->stream->device;
    if (device.plugin != &plugin ||
        std::find(devices.begin(), devices.end(), device.local_index) != devices.end())
      return 0;  // devices of two plugins, or a device twice: no model covers them
    devices.push_back(device.local_index);
  }
  // A scatter moves what a reduce-scatter moves (each rank's part, once), without the sums.
  static constexpr phx_plugin_collective kCollective[] = {
      PHX_PLUGIN_COLLECTIVE_ALL_REDUCE,     PHX_PLUGIN_COLLECTIVE_ALL_GATHER,
      PHX_PLUGIN_COLLECTIVE_REDUCE_SCATTER, PHX_PLUGIN_COLLECTIVE_BROADCAST,
      PHX_PLUGIN_COLLECTIVE_SEND,           PHX_PLUGIN_COLLECTIVE_REDUCE_SCATTER};
  uint64_t time_ns = 0;
  const phx_status status = plugin.api().collective_estimate(
      plugin.instance(), kCollective[static_cast<int>(terms_->kind)], devices.data(),
      devices.size(), terms_->bytes, &time_ns);
  return status == PHX_STATUS_OK ? time_ns : 0;
}

}  // namespace phx::comm
