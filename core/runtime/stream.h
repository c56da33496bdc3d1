// A stream of a context: its tickets, the work it holds back, its ops' records.
#pragma once

#include <phynexus/plugin.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "profile_entry.h"
#include "trace_writer.h"

namespace phx {

class Context;
struct Device;
struct Tensor;

// Work a stream's host holds back until what it waits for has happened (comm.h, "Held
// work"): another stream's event, an asynchronous transfer, a collective's other ranks.
struct HeldWork {
  enum class Kind {
    kSubmission,  // an op held behind other held work: handed to the plugin in turn
    kHostWork,    // run by the host once the plugin has finished the earlier work
    kWait,        // holds the later work until it returns; takes no ticket
  };
  Kind kind = Kind::kHostWork;
  uint64_t ticket = 0;
  // Given the work's ticket. A submission runs under the stream's lock, the others without.
  std::function<void(uint64_t ticket)> run;
};

// What outlives a stream for those that wait on it from elsewhere (events): the stream
// until its destruction, which first waits for its work.
struct StreamLink {
  std::mutex mutex;
  Stream* stream = nullptr;  // null once the stream is being destroyed

  // Whether the stream's work up to ticket has finished; never blocks on it.
  bool finished(uint64_t ticket);
};

struct Stream {
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();  // stops the worker; the caller has waited for the stream's work

  Context* context = nullptr;
  Device* device = nullptr;
  uintptr_t handle = 0;
  void* plugin_stream = nullptr;
  // The last ticket the stream gave out, whichever path ran the op. The plugin numbers
  // only the ops it ran: an op the CPU fallback ran takes a ticket of the host's own.
  // The fallback drains the device before it runs, so every ticket up to its own has
  // finished (drained_through), and the plugin's ticket of a later op is the stream's
  // minus ticket_offset (the fallback ops so far). Changed under mutex.
  // With held work, the stream gives out tickets before the plugin has seen their work:
  // submitted is the last ticket handed to the plugin or finished by the host.
  uint64_t last_ticket = 0;
  uint64_t submitted = 0;
  uint64_t drained_through = 0;
  uint64_t ticket_offset = 0;
  std::mutex mutex;  // serializes the plugin's calls on this stream, guards records and held
  bool profiling = false;
  bool internal = false;  // the runtime's own (the CPU fallback's): traces leave it out
  // The ops' records, for the profile API when profiling, and until their trace events
  // are written when tracing: then the first `traced` of them are written (and, without
  // profiling, dropped). A deque: entries stay put while the plugin fills them.
  std::deque<ProfileEntry> records;
  size_t traced = 0;
  std::deque<trace::RunSpan> run_spans;  // executable runs whose events wait for their ops
  uint32_t trace_id = 0;                 // the stream's number in its context's traces
  uint64_t simulated_end_ns = 0;         // where the modelled device's timeline has got to
  std::shared_ptr<StreamLink> link = std::make_shared<StreamLink>();

  // Where the stream's events are drawn in its context's traces.
  trace::StreamTrack trace_track() const;

  // Throws INVALID_ARGUMENT for a ticket the stream has not given out (0 included).
  void check_issued(uint64_t ticket) const;
  void wait(uint64_t ticket);  // UINT64_MAX: everything
  uint64_t completed();        // the highest finished ticket

  // Queues run as host work (HeldWork::kHostWork) and returns its ticket.
  uint64_t hold_host_work(std::function<void(uint64_t ticket)> run);
  // Holds the stream's later work until wait returns (HeldWork::kWait).
  void hold_until(std::function<void()> wait);
  // Waits until the stream holds nothing back: for the calls that cannot be held.
  void release_held();

  // Gives out the ticket of an op the host ran to its end itself, after the stream's
  // earlier work had finished (the CPU fallback).
  uint64_t issue_finished_ticket();
  // Whether a submission now keeps a record: profiling, or a trace being written.
  bool keeps_records() const;
  // Keeps the record of an op that has finished (the CPU fallback's).
  void add_finished_record(ProfileEntry&& record);
  // Adds the trace's span of an executable's run, written once its ticket has finished.
  void add_run_span(const trace::RunSpan& run);
  // Keeps an end of a trace's flow arrow until the record it binds to is written (an end
  // with `after` binds to the first op queued from now on). False, keeping nothing, when
  // that record has been written already.
  bool add_flow(trace::FlowEnd end);
  // Drops the records (phx_profile_clear); the caller has waited for the stream.
  void clear_records();

  // Hands a checked op to the plugin and returns its ticket; keeps a profile record
  // when profiling, naming node (a graph node's name, or null).
  uint64_t submit(phx_op_id op, const void* params, const Tensor* const* inputs, size_t input_count,
                  const Tensor* const* outputs, size_t output_count, const char* node = nullptr);

  // Hands a run of a plugin's executable (plugin ABI 1.3) to the plugin, with a tensor
  // per value of its graph, and returns its one ticket. When profiling it keeps a record
  // per node of the executable (node_count of them), which describe_node fills (op,
  // signature, node name) before the plugin fills the rest.
  uint64_t run_executable(void* executable, const phx_plugin_tensor* values, size_t value_count,
                          size_t node_count,
                          const std::function<void(size_t, ProfileEntry&)>& describe_node);

 private:
  // Calls the plugin (submit), which gives its ticket, under the stream's lock; checks
  // the ticket, gives it to records and returns the stream's.
  template <typename Submit>
  uint64_t take_ticket(const char* entry, std::span<ProfileEntry* const> records, Submit&& submit);
  template <typename Submit>
  uint64_t take_ticket_locked(const char* entry, std::span<ProfileEntry* const> records,
                              Submit&& submit);
  // Hands a checked op to the plugin, with a record to fill when entry is not null.
  uint64_t submit_locked(phx_plugin_op& call, ProfileEntry* entry);
  // Writes the trace events of the records and runs up to ticket done, which has
  // finished. Called under mutex.
  void write_finished(uint64_t done);
  // Writes the flow ends that bind to record, just written. Under mutex.
  void write_flows(const ProfileEntry& record);
  // Waits for ticket, held work included, and returns held work's first error.
  void wait_locked(std::unique_lock<std::mutex>& lock, uint64_t ticket);
  // Waits for the plugin's work up to ticket (submitted already) and writes its trace.
  void wait_plugin_locked(uint64_t ticket);
  // Queues work behind the held work, starting the worker on first use. Under mutex.
  void hold_locked(HeldWork work);
  // The worker: hands on the held work in order until the stream is destroyed.
  void run_held();
  // Counts ticket as finished by the host: every earlier ticket has finished too (the
  // plugin's work was drained first). Under mutex.
  void finish_on_host(uint64_t ticket);

  std::vector<trace::FlowEnd> flows_;  // under mutex
  uint64_t written_through_ = 0;       // the ticket of the last record written to a trace
  std::deque<HeldWork> held_;
  std::condition_variable held_changed_;  // a held item finished, or one was queued
  std::thread worker_;
  bool stopping_ = false;
  // The first error of held work, returned by the next wait.
  std::optional<std::pair<phx_status, std::string>> held_error_;
};

}  // namespace phx
